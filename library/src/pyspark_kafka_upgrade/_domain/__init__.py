"""Internal. The domain: typed records, interfaces and values every layer above shares.

Layers, from the top: ``cli`` > ``_application`` > ``_adapters`` > ``_core`` > ``_domain``.
Nothing here imports from a layer above it (pyproject.toml's import contracts).
"""
