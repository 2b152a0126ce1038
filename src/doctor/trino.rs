//! `floe doctor`: the Trino checks (DNS, TCP, TLS, HTTP, auth, catalog, metadata tables,
//! one health statement).

use super::*;
use crate::lakehouse::delta::TableFormat;

/// What floe reads where `$entries` fails.
const FILES_INSTEAD: &str = "floe reads $files instead, and dates small files from the table's history where it settles the verdict, else from the files' modification times";

impl Doctor<'_> {
    pub(super) async fn trino(&mut self, s: &Settings) {
        // Each step reports its checks; `None`: one failed that the rest needs.
        let _ = self.trino_steps(s).await;
    }

    async fn trino_steps(&mut self, s: &Settings) -> Option<()> {
        let client = self.trino_client(s).await?;
        self.trino_tls(s, &client).await?;
        self.trino_info(&client).await?;
        self.trino_auth(s, &client).await?;
        self.trino_catalog(s, &client).await?;
        let lake = Lakehouse::new(client.clone(), s.trino.catalog.clone(), s.health.clone())
            .with_catalogs_of(&s.trino)
            .with_fallbacks_beside(&s.stats_cache);
        let connected = lake.connect().await;
        self.more_catalogs(s, &lake, connected.err()).await?;
        self.iceberg_tables(s, &client, &lake).await;
        let listed_from = client.cost();
        let tables = self.trino_tables(s, &lake).await?;
        let listing = client.cost().since(&listed_from);
        // The Iceberg reads are checked on an Iceberg table, when one is read.
        let iceberg = |t: &&TableRef| lake.format_of_catalog(&t.catalog) == TableFormat::Iceberg;
        let table = tables.iter().find(iceberg).unwrap_or(&tables[0]).clone();
        self.entries(&client, &lake, &table).await;
        self.health_statement(&lake, &table).await;
        self.coordinator_budget(s, &lake, &tables, listing).await;
        Some(())
    }

    /// DNS and TCP of the coordinator, then a client for it.
    async fn trino_client(&mut self, s: &Settings) -> Option<Client> {
        let url = &s.trino.url;
        if self
            .reach("trino", url, "trino.url (--trino)")
            .await
            .is_none()
        {
            self.report(Check::skip("trino", "not reachable: nothing else asked"));
            return None;
        }
        let mut cfg = ClientConfig::from_settings(&s.trino, s.query_timeout);
        cfg.connect_timeout = STEP_TIMEOUT;
        cfg.request_timeout = Duration::from_secs(30);
        cfg.retry = RetryPolicy {
            max_retry_time: STEP_TIMEOUT,
            ..RetryPolicy::default()
        };
        let client = match Client::new(cfg) {
            Ok(c) => c.with_max_response_size(s.trino.max_response_size),
            Err(e) => {
                self.report(Check::fail(
                    "trino client",
                    e.to_string(),
                    tls_fix(&s.trino.tls, "trino.ca_file (--ca-file)"),
                ));
                return None;
            }
        };
        Some(client)
    }

    /// The TLS handshake, when the URL is https.
    async fn trino_tls(&mut self, s: &Settings, client: &Client) -> Option<()> {
        let url = &s.trino.url;
        // TLS: the first request opens the connection (handshake included); the second
        // reuses it, so the difference is the handshake's share.
        let t = Instant::now();
        let first = client.info().await;
        let first_time = t.elapsed();
        let https = url.scheme() == "https";
        match &first {
            Err(TrinoError::Transport { message, .. }) if https && is_tls(message) => {
                self.report(Check::fail(
                    "trino TLS",
                    format!("handshake failed: {message}"),
                    tls_fix(&s.trino.tls, "trino.ca_file (--ca-file)"),
                ));
                return None;
            }
            _ if https => {
                let t = Instant::now();
                let second = client.info().await;
                let reused = t.elapsed();
                let verified = tls_source(&s.trino.tls);
                self.report(Check::pass(
                    "trino TLS",
                    format!(
                        "certificate verified ({verified}); handshake ≈ {}",
                        ms(first_time.saturating_sub(if second.is_ok() {
                            reused
                        } else {
                            Duration::ZERO
                        }))
                    ),
                ));
            }
            _ => {
                self.report(Check::skip("trino TLS", "plain http: nothing encrypted"));
            }
        }
        Some(())
    }

    /// `/v1/info`: a Trino coordinator answers, and has started.
    async fn trino_info(&mut self, client: &Client) -> Option<()> {
        let t = Instant::now();
        let info = match client.info().await {
            Ok(i) => i,
            Err(e) => {
                self.report(Check::fail(
                    "trino /v1/info",
                    e.to_string(),
                    "the address answers but not as a Trino coordinator: check the scheme, port and any proxy path in trino.url",
                ));
                return None;
            }
        };
        let took = t.elapsed();
        let figure = format!(
            "Trino {}{} up {}, in {}",
            info.node_version.version,
            info.environment
                .as_deref()
                .map(|e| format!(" (environment {e}),"))
                .unwrap_or_else(|| ",".into()),
            info.uptime.as_deref().unwrap_or("?"),
            ms(took)
        );
        if info.starting {
            self.report(Check::fail(
                "trino /v1/info",
                format!("{figure}: still starting"),
                "wait until the coordinator has started, then run floe doctor again",
            ));
        } else {
            self.report(Check::pass("trino /v1/info", figure));
        }
        Some(())
    }

    /// `SELECT 1` as floe's user: the credentials are accepted.
    async fn trino_auth(&mut self, s: &Settings, client: &Client) -> Option<()> {
        let t = Instant::now();
        match client.query("SELECT 1").await {
            Ok(_) => {
                self.report(Check::pass(
                    "trino auth",
                    format!(
                        "SELECT 1 as {} ({}) in {}",
                        s.trino.user,
                        auth_kind(&s.trino.auth),
                        ms(t.elapsed())
                    ),
                ));
            }
            Err(e) => {
                let fix = match (&e, &s.trino.auth) {
                    (TrinoError::Auth { .. }, Auth::Basic { .. }) => format!(
                        "the password of {} is refused: FLOE_TRINO_PASSWORD, trino.password_env or trino.password_command",
                        s.trino.user
                    ),
                    (TrinoError::Auth { .. }, Auth::Bearer { .. }) => "the token is refused or expired: FLOE_TRINO_TOKEN, trino.token_env or trino.token_command".into(),
                    (TrinoError::Auth { .. }, Auth::None) => "the coordinator wants credentials: set trino.auth and a password or token".into(),
                    _ => "run SELECT 1 as this user with the Trino CLI: the error above is Trino's".into(),
                };
                self.report(Check::fail("trino auth", e.to_string(), fix));
                return None;
            }
        }
        Some(())
    }

    /// The configured catalog exists and its information_schema is readable.
    async fn trino_catalog(&mut self, s: &Settings, client: &Client) -> Option<()> {
        // The catalog through what floe reads of it (its information_schema), not through
        // system.metadata: a server or a user without that still works with floe.
        let catalog = &s.trino.catalog;
        let probe = format!(
            "SELECT count(*) AS n FROM {}.information_schema.schemata",
            crate::sql::quote_ident(catalog)
        );
        match client.query(&probe).await {
            Ok(out) => {
                let n = out.rows.first().and_then(|r| r.u64("n")).unwrap_or(0);
                self.report(Check::pass(
                    "catalog",
                    format!("{catalog} exists ({n} schemas visible)"),
                ));
            }
            Err(e)
                if s.trino.catalogs_by_default
                    && matches!(e.name(), "CATALOG_NOT_FOUND" | "PERMISSION_DENIED") =>
            {
                // None named: the cluster's own catalogs are read (the next check), this
                // one only if its list shows it to this user.
                let figure = format!(
                    "{catalog} not read ({e}): none named, the cluster's Iceberg and Delta Lake catalogs are"
                );
                self.report(Check::skip("catalog", figure));
            }
            Err(e) if e.name() == "CATALOG_NOT_FOUND" => {
                // What the user may use instead, when the server says (best effort).
                let others = client
                    .query("SHOW CATALOGS")
                    .await
                    .map(|o| {
                        o.rows
                            .iter()
                            .filter_map(|r| r.values.first().and_then(|v| v.as_str()))
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default();
                let there = if others.is_empty() {
                    String::new()
                } else {
                    format!(" (there are: {})", others.join(", "))
                };
                self.report(Check::fail(
                    "catalog",
                    format!("no catalog {catalog}{there}: {e}"),
                    "set trino.catalog (--catalog) to the catalog of the Iceberg tables",
                ));
                return None;
            }
            Err(e) => {
                self.report(Check::fail(
                    "catalog",
                    e.to_string(),
                    format!(
                        "the user {} needs to read {catalog}.information_schema (floe lists the catalog's tables through it)",
                        s.trino.user
                    ),
                ));
                return None;
            }
        }
        Some(())
    }

    /// `system.iceberg_tables`, or the slower listing floe falls back to.
    async fn iceberg_tables(&mut self, s: &Settings, client: &Client, lake: &Lakehouse) {
        // The first Iceberg catalog read (the one named, or the cluster's first).
        let catalogs = lake.catalogs();
        let catalog = catalogs
            .iter()
            .find(|c| lake.format_of_catalog(c) == TableFormat::Iceberg)
            .or(catalogs.first())
            .unwrap_or(&s.trino.catalog);
        let version = lake.server_version();
        let listing = format!(
            "SELECT count(*) AS n FROM {}.system.iceberg_tables",
            crate::sql::quote_ident(catalog)
        );
        let fallback =
            "floe lists tables through information_schema.tables instead (slower on big catalogs)";
        if version.is_some_and(|v| v < ICEBERG_TABLES_SINCE) {
            self.report(Check {
                name: "system.iceberg_tables",
                status: Status::Fallback,
                figure: format!(
                    "not in Trino {} (since {ICEBERG_TABLES_SINCE})",
                    version.unwrap_or(0)
                ),
                fix: Some(fallback.into()),
            });
        } else {
            let t = Instant::now();
            match client.query(&listing).await {
                Ok(out) => {
                    let n = out.rows.first().and_then(|r| r.u64("n")).unwrap_or(0);
                    self.report(Check::pass(
                        "system.iceberg_tables",
                        format!("{n} Iceberg tables listed in {}", ms(t.elapsed())),
                    ));
                }
                Err(e) => {
                    self.report(Check {
                        name: "system.iceberg_tables",
                        status: Status::Fallback,
                        figure: e.to_string(),
                        fix: Some(fallback.into()),
                    });
                }
            }
        }
    }

    /// The watched tables: how many, and the first, which the last checks read.
    async fn trino_tables(&mut self, s: &Settings, lake: &Lakehouse) -> Option<Vec<TableRef>> {
        let catalog = &s.trino.catalog;
        let tables = match lake.discover(&s.trino.schemas, &s.trino.tables).await {
            Ok(t) => t,
            Err(e) => {
                self.report(Check::fail(
                    "tables",
                    e.to_string(),
                    "the user needs to list the catalog's tables",
                ));
                return None;
            }
        };
        let Some(table) = tables.first().cloned() else {
            self.report(Check::fail(
                "tables",
                format!(
                    "no Iceberg table in {catalog}{}",
                    if s.trino.schemas.is_empty() {
                        String::new()
                    } else {
                        format!(" schemas {}", s.trino.schemas.join(", "))
                    }
                ),
                "check trino.schemas and trino.tables (--schema), and the user's access",
            ));
            return None;
        };
        self.report(Check::pass(
            "tables",
            format!("{} watched, e.g. {table}", tables.len()),
        ));
        Some(tables)
    }

    /// What an open floe would cost this coordinator per minute of steady refreshes, from
    /// what one listing, one probe batch and one read of the recent writes cost here (the
    /// coordinator's own planning and CPU times), against `coordinator_budget`; and how
    /// often every table is then checked.
    async fn coordinator_budget(
        &mut self,
        s: &Settings,
        lake: &Lakehouse,
        tables: &[TableRef],
        listing: crate::trino::Cost,
    ) {
        let batch = s.probe_batch.max(1).min(tables.len());
        let c = lake.client.cost();
        let probed = lake.probe(&tables[..batch]).await;
        let probe = lake.client.cost().since(&c);
        let c = lake.client.cost();
        let writes = lake
            .recent_writes(
                chrono::Utc::now() - chrono::Duration::from_std(s.refresh).unwrap_or_default(),
            )
            .await;
        let written = lake.client.cost().since(&c);
        let est = crate::lakehouse::budget::SteadyCost {
            tables: tables.len(),
            refresh: s.refresh,
            full_every: s.full_refresh_every,
            probe_batch: s.probe_batch.max(1),
            listing_ms: listing.coordinator_ms(),
            probe_ms: probe.coordinator_ms() * s.probe_batch.max(1) as u64 / batch.max(1) as u64,
            writes_ms: written.coordinator_ms(),
        };
        let per_minute = est.per_minute();
        let budget = s.coordinator_budget;
        // How the writes are read: their figure, and what the line adds about it.
        let (writes_figure, writes_read) = match (&writes, lake.query_list_served()) {
            (Ok(_), true) => ("from the query list, no statement".to_string(), String::new()),
            (Ok(_), false) => (
                format!("{} ms", est.writes_ms),
                format!(
                    "; its query list refused ({}): writes read with a statement",
                    lake.learned_fallbacks().query_list().unwrap_or_default()
                ),
            ),
            (Err(_), _) => (
                format!("{} ms", est.writes_ms),
                "; the coordinator's queries are not readable: writes are seen by the rotation only"
                    .to_string(),
            ),
        };
        let figure = format!(
            "{:.2} s of planning + CPU a minute at {} tables (listing {} ms, probe of {} {} ms, writes {}, {}{}); budget {}{}",
            per_minute.as_secs_f64(),
            tables.len(),
            est.listing_ms,
            est.probe_batch,
            est.probe_ms,
            writes_figure,
            est.probe_cadence(),
            writes_read,
            budget.map_or("none".to_string(), |b| format!(
                "{} s a minute",
                b.as_secs_f64()
            )),
            match est.checked_within(budget) {
                Some(d) => format!(
                    "; every table checked within {}",
                    humantime::format_duration(d)
                ),
                None => String::new(),
            }
        );
        let over = budget.is_some_and(|b| per_minute > b);
        let failed = probed.iter().any(|(_, r)| r.is_err());
        self.report(if over || failed {
            super::Check {
                name: "coordinator budget",
                status: super::Status::Fallback,
                figure,
                fix: Some(if failed {
                    "a probe failed: the user needs SELECT on the tables' $metadata_log_entries".into()
                } else {
                    "floe looks at fewer tables a refresh to stay within it: raise coordinator_budget or full_refresh_every, or narrow trino.tables".into()
                }),
            }
        } else {
            super::Check::pass("coordinator budget", figure)
        });
    }

    /// The health statement on `table`.
    async fn health_statement(&mut self, lake: &Lakehouse, table: &TableRef) {
        let t = Instant::now();
        match lake.table_stats(table).await {
            Ok(st) => {
                self.report(Check::pass(
                    "health statement",
                    format!(
                        "{table}: {} data files, {} snapshots, in {}",
                        st.data_files,
                        st.snapshots,
                        ms(t.elapsed())
                    ),
                ));
            }
            Err(e) => {
                self.report(Check::fail(
                    "health statement",
                    format!("{table}: {e}"),
                    "the user needs SELECT on the table's metadata tables ($files, $snapshots, $properties)",
                ));
            }
        }
    }

    pub(super) async fn entries(&mut self, client: &Client, lake: &Lakehouse, table: &TableRef) {
        // What floe already learned this server cannot read: not asked again.
        let learned = lake.learned_fallbacks();
        if let Some((catalog, c)) = learned
            .catalogs()
            .find(|(c, _)| learned.catalog_unreadable(c))
        {
            self.report(Check {
                name: "$entries",
                status: Status::Fallback,
                figure: format!(
                    "Trino {} cannot read it on catalog {catalog} ({} tables failed, none read: {}), as floe learned (kept in {}); not asked again",
                    lake.server_version().unwrap_or(0),
                    c.failed,
                    c.error.as_deref().unwrap_or("no message"),
                    lake.fallbacks_file()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                ),
                fix: Some(FILES_INSTEAD.into()),
            });
            return;
        }
        let sql = format!("SELECT status FROM {} LIMIT 1", table.meta("entries"));
        let t = Instant::now();
        match client.query(&sql).await {
            Ok(_) => {
                self.report(Check::pass(
                    "$entries",
                    format!("readable on {table} in {}", ms(t.elapsed())),
                ));
            }
            Err(e) => {
                self.report(Check {
                    name: "$entries",
                    status: Status::Fallback,
                    figure: e.to_string(),
                    fix: Some(FILES_INSTEAD.into()),
                });
            }
        }
    }

    /// DNS and TCP of `url`'s host: the addresses, or `None` after a ✗.
    pub(super) async fn reach(
        &mut self,
        what: &'static str,
        url: &Url,
        key: &str,
    ) -> Option<Vec<SocketAddr>> {
        let (dns_name, tcp_name) = match what {
            "trino" => ("trino DNS", "trino TCP"),
            _ => ("airflow DNS", "airflow TCP"),
        };
        let host = url
            .host_str()
            .unwrap_or("")
            .trim_matches(['[', ']'])
            .to_string();
        let Some(port) = url.port_or_known_default() else {
            self.report(Check::fail(
                dns_name,
                format!("{url} names no port"),
                format!("give {key} a port"),
            ));
            return None;
        };
        let t = Instant::now();
        let addrs: Vec<SocketAddr> = match tokio::time::timeout(
            STEP_TIMEOUT,
            tokio::net::lookup_host((host.as_str(), port)),
        )
        .await
        {
            Ok(Ok(a)) => a.collect(),
            Ok(Err(e)) => {
                self.report(Check::fail(
                    dns_name,
                    format!("{host}: {e}"),
                    format!("check the host name in {key}, and the resolver (/etc/resolv.conf, /etc/hosts)"),
                ));
                return None;
            }
            Err(_) => {
                self.report(Check::fail(
                    dns_name,
                    format!("{host}: no answer within {}", ms(STEP_TIMEOUT)),
                    "check the resolver (/etc/resolv.conf): it does not answer",
                ));
                return None;
            }
        };
        let list = addrs
            .iter()
            .map(|a| a.ip().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        self.report(Check::pass(
            dns_name,
            format!("{host} → {list} in {}", ms(t.elapsed())),
        ));
        let mut errors = Vec::new();
        for addr in &addrs {
            let t = Instant::now();
            match tokio::time::timeout(STEP_TIMEOUT, tokio::net::TcpStream::connect(addr)).await {
                Ok(Ok(_)) => {
                    self.report(Check::pass(
                        tcp_name,
                        format!("connected to {addr} in {}", ms(t.elapsed())),
                    ));
                    return Some(addrs);
                }
                Ok(Err(e)) => errors.push(format!("{addr}: {e}")),
                Err(_) => errors.push(format!("{addr}: no answer within {}", ms(STEP_TIMEOUT))),
            }
        }
        self.report(Check::fail(
            tcp_name,
            format!("{url}: {}", errors.join("; ")),
            format!(
                "is the server running and listening on port {port}? If so, a firewall or a missing tunnel is in the way; else correct {key}"
            ),
        ));
        None
    }
}
