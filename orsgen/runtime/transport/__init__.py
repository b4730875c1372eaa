"""The runtime's wire: loop, process, HTTP clients, SDK calls, endpoints and the call policy.
Of the runtime it imports only ``errors`` and ``images`` (``tests/test_import_layers.py``).
"""
