"""Sharding: per-device layout of arrays and the shardings/collectives of compiled programs."""
