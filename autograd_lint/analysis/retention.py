# TEMPORARY placeholder while the real analysis is written.
from enum import Enum
class RetentionKind(Enum):
    STORE = "store"
    ACCUMULATE = "accumulate"
    HOOK = "hook"
class Retention:
    def findings(self, kind):
        return []
