"""HLO: StableHLO, HLO and optimized HLO of a call, each op mapped to source lines."""
