# TEMPORARY placeholder while the real analysis is written.
from autograd_lint.analysis.retention import Retention
class ModuleAnalysis:
    def __init__(self, module, settings):
        self.module = module
        self.settings = settings
        self.retention = Retention()
    @classmethod
    def build(cls, module, settings):
        return cls(module, settings)
