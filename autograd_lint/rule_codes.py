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
    'AGL201': True,
    'AGL202': True,
    'AGL203': True,
    'AGL204': True,
    'AGL205': True,
    'AGL301': True,
    'AGL302': False,
    'AGL303': True,
    'AGL401': True,
    'AGL402': True,
    'AGL403': True,
}

TRIGGERS: dict[str, tuple[bytes, ...]] = {
    'AGL101': (b'torch', b'backward', b'lightning'),
    'AGL102': (b'torch', b'backward', b'lightning'),
    'AGL103': (b'hook', b'forward'),
    'AGL201': (b'torch',),
    'AGL202': (b'torch',),
    'AGL203': (b'torch',),
    'AGL204': (b'split', b'chunk', b'unbind'),
    'AGL205': (b'step',),
    'AGL301': (b'eval', b'val', b'test', b'predict', b'infer', b'generate', b'score', b'.train('),
    'AGL302': (b'no_grad',),
    'AGL303': (b'no_grad', b'inference_mode', b'enable_grad', b'volatile'),
    'AGL401': (b'zero_grad',),
    'AGL402': (b'zero_grad',),
    'AGL403': (b'.grad',),
}
