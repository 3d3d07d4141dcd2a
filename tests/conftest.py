"""Shared pytest configuration: plugins only; fixtures live next to the tests that use them."""

pytest_plugins = ["tests.scenario_plugin"]
