"""The register's path: checkout sessions, quotes, holds, sales and returns."""
