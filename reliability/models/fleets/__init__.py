"""Published fleets.

Published fleets: their rates re-derived with this package's estimators, and a Dataset's
fleet beside them.
"""

from reliability.models.fleets.compare import FleetComparison, compare_fleets
from reliability.models.fleets.published import PublishedFleets, published_fleets

__all__ = ["FleetComparison", "PublishedFleets", "compare_fleets", "published_fleets"]
