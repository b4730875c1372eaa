"""The runtime's wire: loop, process, HTTP clients, SDK calls, endpoints and the call policy.
The lowest layer: it imports only the runtime's foundation modules (``errors``,
``images``), never the layers above it (``tests/test_import_layers.py``).
"""
