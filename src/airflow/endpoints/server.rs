//! `version` and `health`.

use serde_json::Value;

use crate::airflow::model::{AirflowHealth, ApiVersion, ServerVersion};
use crate::airflow::{AirflowClient, AirflowError};

impl AirflowClient {
    /// `GET …/version`.
    pub async fn version(&self) -> Result<ServerVersion, AirflowError> {
        let url = self.url(&["version"], &[])?;
        self.get_json(&url).await
    }

    /// `GET /api/v2/monitor/health` or `/api/v1/health`.
    pub async fn health(&self) -> Result<AirflowHealth, AirflowError> {
        let url = match self.inner.api {
            ApiVersion::V2 => self.url(&["monitor", "health"], &[])?,
            ApiVersion::V1 => self.url(&["health"], &[])?,
        };
        let v: Value = self.get_json(&url).await?;
        if !v.is_object() {
            return Err(AirflowError::Malformed {
                url: url.to_string(),
                message: "the health document is not an object".into(),
            });
        }
        Ok(AirflowHealth::from_value(&v))
    }
}
