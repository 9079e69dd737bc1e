"""The small-model harness around the core file tools (see README.md). Import the modules
themselves (`memento.session.harness.small_model`, …); this package imports nothing at load
time."""
