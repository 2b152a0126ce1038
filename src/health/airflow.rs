//! Airflow's own health as floe judges it (pure: from what its health endpoint said).

use crate::airflow::{AirflowHealth, HealthStatus};

/// Components the header should name (unhealthy ones only).
pub fn unhealthy(h: &AirflowHealth) -> Vec<&'static str> {
    [
        ("scheduler", &h.scheduler),
        ("dag-processor", &h.dag_processor),
        ("metadatabase", &h.metadatabase),
    ]
    .into_iter()
    .filter(|(_, c)| c.status == Some(HealthStatus::Unhealthy))
    .map(|(n, _)| n)
    .collect()
}
