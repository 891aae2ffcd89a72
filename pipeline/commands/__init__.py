"""The `pipeline` commands, one module each, in the shape pipeline/commands/api.py describes;
pipeline/cli.py builds the parser from them."""
