"""Every rule, one class per module, named by its code."""

from autograd_lint.rules.agl101_graph_stored_in_container import GraphStoredInContainer
from autograd_lint.rules.agl102_graph_accumulated import GraphAccumulated
from autograd_lint.rules.agl103_hook_keeps_graph import HookKeepsGraph
from autograd_lint.rules.agl104_graph_carried_across_iterations import GraphCarriedAcrossIterations
from autograd_lint.rules.agl105_retain_graph_on_last_backward import RetainGraphOnLastBackward
from autograd_lint.rules.agl201_inplace_on_saved_tensor import InplaceOnSavedTensor
from autograd_lint.rules.agl202_inplace_on_leaf import InplaceOnLeaf
from autograd_lint.rules.agl203_inplace_through_data import InplaceThroughData
from autograd_lint.rules.agl204_inplace_on_multi_output_view import InplaceOnMultiOutputView
from autograd_lint.rules.agl205_step_before_backward import StepBeforeBackward
from autograd_lint.rules.agl206_snapshot_aliases_parameters import SnapshotAliasesParameters
from autograd_lint.rules.agl301_eval_without_no_grad import EvalWithoutNoGrad
from autograd_lint.rules.agl302_no_grad_could_be_inference_mode import NoGradCouldBeInferenceMode
from autograd_lint.rules.agl303_ineffective_grad_guard import IneffectiveGradGuard
from autograd_lint.rules.agl304_detect_anomaly_left_on import DetectAnomalyLeftOn
from autograd_lint.rules.agl305_checkpoint_without_rng_state import CheckpointWithoutRngState
from autograd_lint.rules.agl401_zero_grad_set_to_none_false import ZeroGradSetToNoneFalse
from autograd_lint.rules.agl402_zero_grad_default_before_torch_2 import ZeroGradDefaultBeforeTorch2
from autograd_lint.rules.agl403_manual_grad_zeroing import ManualGradZeroing
from autograd_lint.rules.agl404_gradients_never_zeroed import GradientsNeverZeroed
from autograd_lint.rules.agl405_zero_grad_discards_accumulation import ZeroGradDiscardsAccumulation
from autograd_lint.rules.agl501_loss_made_leaf import LossMadeLeaf
from autograd_lint.rules.agl502_non_leaf_trainable import NonLeafTrainable
from autograd_lint.rules.agl503_unregistered_submodule import UnregisteredSubmodule
from autograd_lint.rules.agl504_requires_grad_attribute_on_module import RequiresGradAttributeOnModule
from autograd_lint.rules.agl505_clip_before_unscale import ClipBeforeUnscale
from autograd_lint.rules.agl506_parameter_detached_in_forward import ParameterDetachedInForward

RULE_CLASSES = (
    GraphStoredInContainer,
    GraphAccumulated,
    HookKeepsGraph,
    GraphCarriedAcrossIterations,
    RetainGraphOnLastBackward,
    InplaceOnSavedTensor,
    InplaceOnLeaf,
    InplaceThroughData,
    InplaceOnMultiOutputView,
    StepBeforeBackward,
    SnapshotAliasesParameters,
    EvalWithoutNoGrad,
    NoGradCouldBeInferenceMode,
    IneffectiveGradGuard,
    DetectAnomalyLeftOn,
    CheckpointWithoutRngState,
    ZeroGradSetToNoneFalse,
    ZeroGradDefaultBeforeTorch2,
    ManualGradZeroing,
    GradientsNeverZeroed,
    ZeroGradDiscardsAccumulation,
    LossMadeLeaf,
    NonLeafTrainable,
    UnregisteredSubmodule,
    RequiresGradAttributeOnModule,
    ClipBeforeUnscale,
    ParameterDetachedInForward,
)

__all__ = ["RULE_CLASSES"]
