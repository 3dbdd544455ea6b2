"""``autograd-lint verify``: run the user's program and check each static
finding against what actually happens.

Opt-in only: ``check`` never runs user code. The parent side (``runner``)
lints, launches the child and reports; it never imports torch. The child side
(``child``) imports torch, installs the probes and runs the program in-process.
"""

# Verdicts, in report order.
CONFIRMED = "confirmed"
LATENT = "latent"
NOT_REPRODUCED = "not reproduced"
NOT_REACHED = "not reached"
UNVERIFIABLE = "unverifiable"
STATUSES = (CONFIRMED, LATENT, NOT_REPRODUCED, NOT_REACHED, UNVERIFIABLE)
