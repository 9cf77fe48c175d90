"""RankEncoder's machinery: corpus index, rank vectors (Eq. 2-3), mixed scoring (Eq. 7)."""
