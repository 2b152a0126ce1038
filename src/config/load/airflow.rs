//! The `[airflow]` layers (optional: configured when a URL is).

use url::Url;

use super::{Layers, refuse_plain_http, size};
use crate::config::ConfigError;
use crate::config::file::merge_airflow;
use crate::config::secrets::{SecretKind, secret};
use crate::config::settings::{
    AirflowSettings, DEFAULT_MAX_LOG_SIZE, DEFAULT_MAX_RESPONSE_SIZE, TlsSettings,
};

impl Layers<'_> {
    /// Airflow (optional): configured when a URL is.
    pub(super) fn airflow(&self) -> Result<Option<AirflowSettings>, ConfigError> {
        let over = self.over;
        let a = merge_airflow(
            self.file.airflow.clone().unwrap_or_default(),
            self.profile.airflow.clone().unwrap_or_default(),
        );
        let airflow_url = over
            .airflow
            .clone()
            .or_else(|| self.env_nonempty("FLOE_AIRFLOW_URL"))
            .or_else(|| a.url.clone());
        let Some(text) = airflow_url else {
            return Ok(None);
        };
        let url = Url::parse(text.trim()).map_err(|reason| ConfigError::AirflowUrl {
            at: self.at("airflow.url"),
            text: text.clone(),
            reason,
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ConfigError::AirflowScheme {
                at: self.at("airflow.url"),
                text,
            });
        }
        if url.password().is_some() {
            return Err(ConfigError::AirflowPassword {
                at: self.at("airflow.url"),
            });
        }
        let password = secret(
            self.env,
            SecretKind::Password,
            "FLOE_AIRFLOW_PASSWORD",
            a.password_env.as_deref(),
            a.password_command.as_deref(),
            self.at("airflow.password_env"),
            self.at("airflow.password_command"),
        )?;
        let token = secret(
            self.env,
            SecretKind::Token,
            "FLOE_AIRFLOW_TOKEN",
            a.token_env.as_deref(),
            a.token_command.as_deref(),
            self.at("airflow.token_env"),
            self.at("airflow.token_command"),
        )?;
        if password.is_some() || token.is_some() {
            refuse_plain_http(
                &url,
                if token.is_some() {
                    "an Airflow token"
                } else {
                    "an Airflow password"
                },
                self.at("airflow.url"),
            )?;
        }
        let user = over
            .airflow_user
            .clone()
            .or_else(|| self.env_nonempty("FLOE_AIRFLOW_USER"))
            .or_else(|| a.user.clone())
            .or_else(|| (!url.username().is_empty()).then(|| url.username().to_string()));
        let mut clean = url.clone();
        let _ = clean.set_username("");
        Ok(Some(AirflowSettings {
            url: clean,
            user,
            password,
            token,
            api: a.api.unwrap_or_default(),
            tls: TlsSettings {
                ca_file: a.ca_file.clone(),
                insecure_skip_verify: a.insecure_skip_verify.unwrap_or(false),
            },
            dag_tags: a
                .dag_tags
                .clone()
                .unwrap_or_else(|| vec!["maintenance".into()]),
            dag_ids: a.dag_ids.clone().unwrap_or_default(),
            runs: a.runs.unwrap_or(25).clamp(1, 100),
            test_connections: a.test_connections.unwrap_or(true),
            max_response_size: size(
                a.max_response_size,
                DEFAULT_MAX_RESPONSE_SIZE,
                self.at("airflow.max_response_size"),
            )?,
            max_log_size: size(
                a.max_log_size,
                DEFAULT_MAX_LOG_SIZE,
                self.at("airflow.max_log_size"),
            )?,
        }))
    }
}
