"""The model: a world (:mod:`~fsc.model.pomdp`), a memory architecture (:mod:`~fsc.model.architecture`,
:mod:`~fsc.model.memory`, :mod:`~fsc.model.product`), a policy on it (:mod:`~fsc.model.policy`,
:mod:`~fsc.model.controller`) and the Markov chain they make together (:mod:`~fsc.model.chain`).

Pure structure and weights: nothing here solves anything (docs/model.md).
"""

# The built-in memory kinds (RAM, Chain, Column, Memento) register themselves when fsc.model.memory is imported:
# imported with the package, a saved architecture naming them reads back (MemoryArchitecture.from_dict) in any
# process, whichever module of the model it imported first.
import fsc.model.memory  # noqa: E402, F401
