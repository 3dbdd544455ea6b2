"""Every rule, one class per module, named by its code."""

from autograd_lint.rules.agl101_graph_stored_in_container import GraphStoredInContainer
from autograd_lint.rules.agl102_graph_accumulated import GraphAccumulated
from autograd_lint.rules.agl103_hook_keeps_graph import HookKeepsGraph

RULE_CLASSES = (
    GraphStoredInContainer,
    GraphAccumulated,
    HookKeepsGraph,
)

__all__ = ["RULE_CLASSES"]
