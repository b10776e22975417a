"""Operations around the domain: the delivery queue on Redis, units of work outside a request,
the periodic upkeep and the reachability of the backing services."""
