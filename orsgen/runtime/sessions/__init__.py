"""Sessions: the cap, the pool and its prefetch, opening and the drift guard. Above
:mod:`orsgen.runtime.transport`, below :mod:`orsgen.runtime.records`.
"""
