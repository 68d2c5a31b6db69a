"""One module per ``topo`` verb: its options, one library call, its renderers.

:mod:`topo.cli` assembles them into the app; a module here registers nothing itself.
"""
