"""Per-feature pytest plugins, registered by ``jaxscope.pytest_plugin``."""
