"""The table lake: encode tables once as table/column/row vectors, index them, and reuse them for
search, union/join discovery, enrichment, evidence retrieval for claims and the TRL-Bench protocol.

- :mod:`tabverify.lake.encoders`: the :class:`TableEncoder` protocol and the built-in encoders.
"""
