"""Sessions: the cap (``cap``), which server (``placement``), the pool and its group
prefetch (``pool``), one reset's open under the call policy (``opening``) and the drift
guard (``drift``).

Above :mod:`orsgen.runtime.transport`, below :mod:`orsgen.runtime.records`.
"""
