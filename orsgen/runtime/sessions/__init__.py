"""Sessions: the cap, the pool and its prefetch, opening (on which
of several servers: the transport's replica pool) and the drift guard.
Above :mod:`orsgen.runtime.transport`, below :mod:`orsgen.runtime.records`.
"""
