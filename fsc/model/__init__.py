"""The model: a world (:mod:`~fsc.model.pomdp`), a memory architecture (:mod:`~fsc.model.architecture`,
:mod:`~fsc.model.memory`, :mod:`~fsc.model.product`), a policy on it (:mod:`~fsc.model.policy`,
:mod:`~fsc.model.controller`) and the Markov chain they make together (:mod:`~fsc.model.chain`).

Pure structure and weights: nothing here solves anything (docs/model.md).
"""
