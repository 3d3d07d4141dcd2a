"""Air-gap transport: package indexes read and served, fetch memo, signed bundles' signatures,
fleets.
"""
