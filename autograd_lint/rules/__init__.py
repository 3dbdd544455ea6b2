"""Every rule, one class per module, named by its code."""

from autograd_lint.rules.agl101_graph_stored_in_container import GraphStoredInContainer
from autograd_lint.rules.agl102_graph_accumulated import GraphAccumulated
from autograd_lint.rules.agl103_hook_keeps_graph import HookKeepsGraph
from autograd_lint.rules.agl201_inplace_on_saved_tensor import InplaceOnSavedTensor
from autograd_lint.rules.agl202_inplace_on_leaf import InplaceOnLeaf
from autograd_lint.rules.agl203_inplace_through_data import InplaceThroughData

RULE_CLASSES = (
    GraphStoredInContainer,
    GraphAccumulated,
    HookKeepsGraph,
    InplaceOnSavedTensor,
    InplaceOnLeaf,
    InplaceThroughData,
)

__all__ = ["RULE_CLASSES"]
