"""Every code, whether it is on by default, and each rule's trigger words
(a file holding none of an enabled rule's is never parsed for it): what
selecting codes and the pre-filter need, without importing the rules (and
LibCST through them). Generated from the rule classes by
``python tests/test_rule_codes.py``; a test keeps it in step."""

DEFAULT_ENABLED: dict[str, bool] = {
    'AGL001': True,
    'AGL101': True,
    'AGL102': True,
    'AGL103': True,
    'AGL104': True,
    'AGL201': True,
    'AGL202': True,
    'AGL203': True,
    'AGL204': True,
    'AGL205': True,
    'AGL206': True,
    'AGL301': True,
    'AGL302': False,
    'AGL303': True,
    'AGL401': True,
    'AGL402': True,
    'AGL403': True,
    'AGL501': True,
    'AGL503': True,
    'AGL504': True,
    'AGL505': True,
    'AGL506': True,
}

TRIGGERS: dict[str, tuple[bytes, ...]] = {
    'AGL101': (b'backward', b'hook', b'torch', b'import *', b'nn.', b'eval(', b'train(', b'parameters(', b'modules(', b'children(', b'register_', b'add_module', b'get_submodule', b'load_state_dict', b'from_pretrained', b'transformers', b'timm', b'diffusers', b'lightning', b'einops', b'forward'),
    'AGL102': (b'backward', b'hook', b'torch', b'import *', b'nn.', b'eval(', b'train(', b'parameters(', b'modules(', b'children(', b'register_', b'add_module', b'get_submodule', b'load_state_dict', b'from_pretrained', b'transformers', b'timm', b'diffusers', b'lightning', b'einops', b'forward'),
    'AGL103': (b'hook', b'forward'),
    'AGL104': (b'backward', b'step'),
    'AGL201': (b'torch', b'import *', b'nn.', b'eval(', b'train(', b'parameters(', b'modules(', b'children(', b'register_', b'add_module', b'get_submodule', b'load_state_dict', b'from_pretrained', b'transformers', b'timm', b'diffusers', b'lightning', b'einops', b'forward'),
    'AGL202': (b'torch', b'import *', b'nn.', b'eval(', b'train(', b'parameters(', b'modules(', b'children(', b'register_', b'add_module', b'get_submodule', b'load_state_dict', b'from_pretrained', b'transformers', b'timm', b'diffusers', b'lightning', b'einops', b'forward'),
    'AGL203': (b'torch', b'import *', b'nn.', b'eval(', b'train(', b'parameters(', b'modules(', b'children(', b'register_', b'add_module', b'get_submodule', b'load_state_dict', b'from_pretrained', b'transformers', b'timm', b'diffusers', b'lightning', b'einops', b'forward'),
    'AGL204': (b'split', b'chunk', b'unbind', b'import *'),
    'AGL205': (b'step',),
    'AGL206': (b'state_dict(',),
    'AGL301': (b'val', b'test', b'predict', b'infer', b'generate', b'score', b'no_grad', b'inference_mode', b'torch', b'import *', b'nn.', b'eval(', b'train(', b'parameters(', b'modules(', b'children(', b'register_', b'add_module', b'get_submodule', b'load_state_dict', b'from_pretrained', b'transformers', b'timm', b'diffusers', b'lightning', b'einops', b'forward'),
    'AGL302': (b'no_grad',),
    'AGL303': (b'no_grad', b'inference_mode', b'enable_grad', b'volatile'),
    'AGL401': (b'zero_grad',),
    'AGL402': (b'zero_grad',),
    'AGL403': (b'.grad',),
    'AGL501': (b'requires_grad',),
    'AGL503': (b'nn.', b'Module', b'Parameter'),
    'AGL504': (b'requires_grad',),
    'AGL505': (b'scale(',),
    'AGL506': (b'Parameter',),
}
