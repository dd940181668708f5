"""The REST API's transport security as Connect offers it: listeners, TLS, basic authentication, CORS.

`settings.RestSecurity.of(config)` reads the worker's settings once at start (and fails there, with a
message, on anything it cannot serve); the REST server binds `listeners.py`'s listeners with `tls.py`'s
contexts, and `app.create_app` stacks `guards.py` and `basic_auth.py` outside every other layer.
"""
