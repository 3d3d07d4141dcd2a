"""What to tell a user whose launch needs an extension no local build provides, from the
shipped recipes' variants (the advice lives with the recipe that knows the reason)."""

from __future__ import annotations

from wh.kernels.recipe import load_recipe, shipped


def advice_for(need: str) -> str:
    """``--variant`` that provides ``need``, and where it cannot be built and what to do."""
    for name in shipped():
        recipe = load_recipe(name)
        for var in recipe.variants.values():
            if need not in var.on.provides:
                continue
            parts = [f"`wh build {recipe.name} --variant {var.name}` builds it"]
            for os_name, why in sorted(var.on.refused.items()):
                parts.append(f"it cannot be built for {os_name}: {why}")
            return "; ".join(parts)
    return "rebuild with the variant that includes it"
