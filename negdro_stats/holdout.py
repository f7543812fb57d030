"""Deprecated path (0.1's flat layout): its names are in :mod:`negdro_stats.peers.holdout`
now; this module forwards them with a DeprecationWarning until 0.3."""

from . import _moved

_moved.forward(__name__)
