"""Logs on object storage (S3, GCS, any fsspec URL): written through a local
spool, uploaded in sealed segments exactly once; read back by listing and
ranged reads.  See docs/remote.md."""
