"""The wire: protocol v1's message models, and how records, keyframes and stream state are encoded
(compact columns, short keys, packed text). Imports nothing from the other wings."""
