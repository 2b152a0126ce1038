//! A DAG's source file, read once per version: which version Airflow holds now (Airflow 3:
//! `latest_dag_version` of `GET /api/v2/dags/{dag_id}/details`; Airflow 2: `file_token` of
//! `GET /api/v1/dags/{dag_id}`), then the file of that version (`GET
//! /api/v2/dagSources/{dag_id}?version_number=N`; `GET /api/v1/dagSources/{file_token}`),
//! within `airflow.max_response_size`. The text is the server's, hostile like any: shown
//! only through `text::sanitize`.

use reqwest::Method;
use serde::{Deserialize, Serialize};

use crate::airflow::http::{JSON, Payload, decode};
use crate::airflow::model::{ApiVersion, Dag};
use crate::airflow::{AirflowClient, AirflowError};

/// Which version of a DAG's file Airflow holds: the key its source is cached by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "api", rename_all = "lowercase")]
pub enum SourceKey {
    /// Airflow 3: the DAG's version number (`None`: the server names no version, so the
    /// latest is read each time).
    V2 {
        dag_id: String,
        version_number: Option<u64>,
    },
    /// Airflow 2: the file token (it changes with the file's path, not its content, so the
    /// source is read again at every full refresh of the DAG list).
    V1 { file_token: String },
}

impl SourceKey {
    /// Whether a source read under this key is still the one Airflow holds: a version
    /// number names a fixed file, a file token does not.
    pub fn is_fixed(&self) -> bool {
        matches!(
            self,
            SourceKey::V2 {
                version_number: Some(_),
                ..
            }
        )
    }

    /// `v3` for a title; empty where Airflow numbers no version.
    pub fn short(&self) -> String {
        match self {
            SourceKey::V2 {
                version_number: Some(n),
                ..
            } => format!("v{n}"),
            _ => String::new(),
        }
    }

    /// `version 3`, `file token …` for messages.
    pub fn describe(&self) -> String {
        match self {
            SourceKey::V2 {
                version_number: Some(n),
                ..
            } => format!("version {n}"),
            SourceKey::V2 { .. } => "its latest version".into(),
            SourceKey::V1 { .. } => "its file token".into(),
        }
    }
}

/// A DAG's file as Airflow serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DagSource {
    pub key: SourceKey,
    /// The file's name (`compact_permits.py`), from the DAG's `relative_fileloc` or
    /// `fileloc`.
    pub file: String,
    pub content: String,
}

#[derive(Deserialize)]
struct WireVersion {
    #[serde(default)]
    version_number: Option<u64>,
}

#[derive(Deserialize)]
struct WireDetails {
    #[serde(default)]
    latest_dag_version: Option<WireVersion>,
    #[serde(default)]
    file_token: Option<String>,
}

#[derive(Deserialize)]
struct WireSource {
    #[serde(default)]
    content: Option<String>,
}

/// The file's name from the DAG's location: `compact_permits.py` of
/// `/opt/airflow/dags/compact_permits.py`; `<dag_id>.py` when Airflow gives none.
pub fn file_name(dag: &Dag) -> String {
    dag.relative_fileloc
        .as_deref()
        .or(dag.fileloc.as_deref())
        .map(|p| p.rsplit(['/', '\\']).next().unwrap_or(p).to_string())
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| format!("{}.py", dag.dag_id))
}

impl AirflowClient {
    /// Which version of `dag`'s file Airflow holds now.
    pub async fn source_key(&self, dag: &Dag) -> Result<SourceKey, AirflowError> {
        match self.api() {
            ApiVersion::V2 => {
                let url = self.url(&["dags", &dag.dag_id, "details"], &[])?;
                let d: WireDetails = self.get_json(&url).await?;
                Ok(SourceKey::V2 {
                    dag_id: dag.dag_id.clone(),
                    version_number: d.latest_dag_version.and_then(|v| v.version_number),
                })
            }
            ApiVersion::V1 => {
                let url = self.url(&["dags", &dag.dag_id], &[])?;
                let d: WireDetails = self.get_json(&url).await?;
                match d.file_token.filter(|t| !t.trim().is_empty()) {
                    Some(file_token) => Ok(SourceKey::V1 { file_token }),
                    None => Err(AirflowError::Malformed {
                        url: url.to_string(),
                        message: "the DAG has no file_token to read its source with".into(),
                    }),
                }
            }
        }
    }

    /// The file of `dag` at `key`.
    pub async fn dag_source(&self, dag: &Dag, key: &SourceKey) -> Result<DagSource, AirflowError> {
        let url = match key {
            SourceKey::V2 {
                dag_id,
                version_number,
            } => {
                let q: Vec<(&str, String)> = version_number
                    .iter()
                    .map(|n| ("version_number", n.to_string()))
                    .collect();
                self.url(&["dagSources", dag_id], &q)?
            }
            SourceKey::V1 { file_token } => self.url(&["dagSources", file_token], &[])?,
        };
        let r = self.call(Method::GET, &url, Payload::None, JSON).await?;
        let w: WireSource = decode(&url, &r.text)?;
        let content = w.content.ok_or_else(|| AirflowError::Malformed {
            url: url.to_string(),
            message: "no \"content\" in the DAG source".into(),
        })?;
        Ok(DagSource {
            key: key.clone(),
            file: file_name(dag),
            content,
        })
    }
}
