//! The `[trino]` layers: connection, catalog, session, TLS and authentication.

use std::time::Duration;

use url::Url;

use super::{Layers, refuse_plain_http, size};
use crate::config::file::{AuthKind, TrinoFile, merge_trino};
use crate::config::secrets::{SecretKind, secret};
use crate::config::settings::{
    Auth, DEFAULT_MAX_RESPONSE_SIZE, DEFAULT_OAUTH2_LOGIN_TIMEOUT, DEFAULT_OAUTH2_TOKEN_LIFETIME,
    OAuth2Settings, TlsSettings, TrinoSettings,
};
use crate::config::{At, ConfigError, uri};
use crate::units::Dur;

impl Layers<'_> {
    /// Trino: top-level section < profile section < env < flags.
    pub(super) fn trino(&self) -> Result<TrinoSettings, ConfigError> {
        let over = self.over;
        let t = merge_trino(
            self.file.trino.clone().unwrap_or_default(),
            self.profile.trino.clone().unwrap_or_default(),
        );
        let mut endpoint = uri::TrinoEndpoint::default();
        let url_text = over
            .trino
            .clone()
            .or_else(|| self.env_nonempty("FLOE_TRINO_URL"))
            .or_else(|| t.url.clone());
        let url_origin = if over.trino.is_some() {
            Box::new(At::Flag("--trino"))
        } else if self.env_nonempty("FLOE_TRINO_URL").is_some() {
            Box::new(At::Env("FLOE_TRINO_URL".into()))
        } else {
            self.at("trino.url")
        };
        if let Some(text) = &url_text {
            endpoint = uri::parse_trino_uri(text).map_err(|source| ConfigError::TrinoUrl {
                at: url_origin,
                source,
            })?;
        }
        let url = endpoint
            .url
            .clone()
            .ok_or_else(|| ConfigError::NoTrinoUrl {
                file: self
                    .file_path
                    .clone()
                    .unwrap_or_else(|| self.dirs.config.join("config.toml")),
            })?;
        let user = over
            .user
            .clone()
            .or_else(|| self.env_nonempty("FLOE_TRINO_USER"))
            .or_else(|| endpoint.user.clone())
            .or_else(|| t.user.clone())
            .or_else(|| self.env_nonempty("USER"))
            .unwrap_or_else(|| "floe".into());
        let catalog = over
            .catalog
            .clone()
            .or_else(|| self.env_nonempty("FLOE_TRINO_CATALOG"))
            .or_else(|| endpoint.catalog.clone())
            .or_else(|| t.catalog.clone());
        // None named: every Iceberg and Delta Lake catalog the cluster has, `iceberg`
        // first (see `Lakehouse::with_catalogs_of`).
        let catalogs_by_default = catalog.is_none();
        let catalog = catalog.unwrap_or_else(|| "*".into());
        // `iceberg,delta`: the first is the catalog, the others are read beside it; `*`
        // alone reads every one of the cluster's beside `iceberg`.
        let mut named: Vec<String> = catalog
            .split(',')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect();
        let catalog = match named.iter().position(|c| c != "*") {
            Some(i) => named.remove(i),
            None => "iceberg".to_string(),
        };
        let more_catalogs = named;
        let schemas = if !over.schemas.is_empty() {
            over.schemas.clone()
        } else if let Some(s) = self.env_nonempty("FLOE_SCHEMAS") {
            s.split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect()
        } else if let Some(s) = &endpoint.schema {
            vec![s.clone()]
        } else {
            t.schemas.clone().unwrap_or_default()
        };
        let tables = if !over.tables.is_empty() {
            over.tables.clone()
        } else {
            t.tables.clone().unwrap_or_default()
        };
        let auth = self.trino_auth(&t, &url)?;
        let ca_file = over.ca_file.clone().or_else(|| t.ca_file.clone());
        if let Some(ca) = &ca_file
            && !ca.exists()
        {
            return Err(ConfigError::NoCaFile {
                at: self.at("trino.ca_file"),
                file: ca.clone(),
            });
        }
        Ok(TrinoSettings {
            url,
            user,
            catalog,
            more_catalogs,
            catalogs_by_default,
            schemas,
            tables,
            auth,
            tls: TlsSettings {
                ca_file,
                insecure_skip_verify: over.insecure_skip_verify
                    || endpoint.insecure_skip_verify
                    || t.insecure_skip_verify.unwrap_or(false),
            },
            session: t.session.clone().unwrap_or_default(),
            source: t.source.clone().unwrap_or_else(|| "floe".into()),
            client_tags: t.client_tags.clone().unwrap_or_default(),
            max_response_size: size(
                t.max_response_size,
                DEFAULT_MAX_RESPONSE_SIZE,
                self.at("trino.max_response_size"),
            )?,
        })
    }

    /// Trino authentication: `trino.auth`, or whichever secret is set.
    fn trino_auth(&self, t: &TrinoFile, url: &Url) -> Result<Auth, ConfigError> {
        let password = secret(
            self.env,
            SecretKind::Password,
            "FLOE_TRINO_PASSWORD",
            t.password_env.as_deref(),
            t.password_command.as_deref(),
            self.at("trino.password_env"),
            self.at("trino.password_command"),
        )?;
        let token = secret(
            self.env,
            SecretKind::Token,
            "FLOE_TRINO_TOKEN",
            t.token_env.as_deref(),
            t.token_command.as_deref(),
            self.at("trino.token_env"),
            self.at("trino.token_command"),
        )?;
        let auth_kind = self.over.auth.or(t.auth).unwrap_or(if token.is_some() {
            AuthKind::Bearer
        } else if password.is_some() {
            AuthKind::Basic
        } else {
            AuthKind::None
        });
        Ok(match auth_kind {
            AuthKind::None => Auth::None,
            AuthKind::Basic => {
                let password = password.ok_or_else(|| ConfigError::NoPassword {
                    at: self.at("trino.auth"),
                })?;
                if url.scheme() != "https" {
                    return Err(ConfigError::PasswordOverHttp {
                        at: self.at("trino.auth"),
                        url: url.to_string(),
                    });
                }
                Auth::Basic { password }
            }
            AuthKind::Bearer => {
                let token = token.ok_or_else(|| ConfigError::NoToken {
                    at: self.at("trino.auth"),
                })?;
                refuse_plain_http(url, "a Trino token", self.at("trino.url"))?;
                Auth::Bearer { token }
            }
            AuthKind::OAuth2 => {
                refuse_plain_http(url, "OAuth2 tokens", self.at("trino.url"))?;
                let positive = |d: Option<Dur>, default: Duration, key: &str| {
                    let d = d.map(|d| d.0).unwrap_or(default);
                    if d.is_zero() {
                        return Err(ConfigError::NotPositive { at: self.at(key) });
                    }
                    Ok(d)
                };
                Auth::OAuth2(OAuth2Settings {
                    cache_dir: self.dirs.cache.join("oauth2"),
                    login_timeout: positive(
                        t.oauth2_login_timeout,
                        DEFAULT_OAUTH2_LOGIN_TIMEOUT,
                        "trino.oauth2_login_timeout",
                    )?,
                    token_lifetime: positive(
                        t.oauth2_token_lifetime,
                        DEFAULT_OAUTH2_TOKEN_LIFETIME,
                        "trino.oauth2_token_lifetime",
                    )?,
                })
            }
        })
    }
}
