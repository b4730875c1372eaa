"""The runtime's wire: the event loop thread, the process's parts and their shutdown, the
aiohttp client, the SDK calls, endpoints and the servers' health (the call policy).

The lowest layer: it imports only the runtime's foundation modules (``errors``,
``images``), never the layers above it (``tests/test_import_layers.py``).
"""
