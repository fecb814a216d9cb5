"""One module per provider, each defining ``PROVIDER`` (private; see ``_registry``).

The registry lists this package: a module here is a provider. Modules whose name starts
with ``_`` are helpers, not providers.
"""
