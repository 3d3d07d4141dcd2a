"""Shared pytest configuration: plugins only."""

pytest_plugins = ["tests.fixtures", "tests.scenario_plugin"]
