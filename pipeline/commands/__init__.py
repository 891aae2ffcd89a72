"""`pipeline` subcommands by concern; pipeline/cli.py builds the parser from them."""
