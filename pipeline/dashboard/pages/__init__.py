"""The dashboard's pages, a handler per page or small group of pages: each reads through the
operators' read model (pipeline/admin/) in one snapshot and renders its template. What they
share (admission, rendering, database work) is pipeline/dashboard/handler.py; every security
decision is pipeline/dashboard/security.py's."""
