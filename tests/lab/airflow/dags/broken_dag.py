"""A DAG file that no longer imports (its helper package was removed): the dag processor
records a ModuleNotFoundError for it, which the API lists under import errors."""

from __future__ import annotations

from airflow import DAG  # noqa: F401

import lakehouse_maintenance_helpers  # noqa: F401  — module does not exist

with DAG(dag_id="rewrite_manifests", schedule="@weekly", catchup=False):
    pass
