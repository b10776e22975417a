"""Reports for the back office (docs/api.md#reports): one module per report, each a read of one
consistent snapshot that locks nothing a register waits on. They return plain values
(integers of kopecks, dates, ids); the HTTP edge renders them as JSON or CSV."""
