//! Memory of a loaded screen: 1,000 tables, 100,000 partitions, 10,000 snapshots
//! (target ≤ 100 MB RSS). Prints resident-set figures from /proc.

mod data;

fn rss_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    // `cargo test --benches` runs bench targets too; measure only under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    if std::env::var("FLOE_BENCH_MEMORY").as_deref() == Ok("serve") {
        return serve();
    }
    let base = rss_kb("VmRSS:");
    let s = data::loaded_state(1000, 100_000, 10_000, '2');
    let loaded = rss_kb("VmRSS:");
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 48)).unwrap();
    term.draw(|f| floe::ui::draw(f, &s)).unwrap();
    let peak = rss_kb("VmHWM:");
    println!("memory: 1,000 tables + 100,000 partitions + 10,000 snapshots");
    println!("  RSS before  {:>7.1} MB", base as f64 / 1024.0);
    println!(
        "  RSS loaded  {:>7.1} MB (+{:.1} MB for the data)",
        loaded as f64 / 1024.0,
        (loaded - base) as f64 / 1024.0
    );
    println!(
        "  peak RSS    {:>7.1} MB (target ≤ 100 MB)",
        peak as f64 / 1024.0
    );
    std::hint::black_box(&s);
    // floe serve's figures in a process of their own (a freed heap stays resident).
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--bench")
        .env("FLOE_BENCH_MEMORY", "serve")
        .output()
        .unwrap();
    print!("{}", String::from_utf8_lossy(&out.stdout));
}

/// What `floe serve` holds for 3 clusters of 1,000 tables: each cluster's records and the
/// stats cache's copy of them (two `TableStats` a table), its families as its last refresh
/// rendered them, and one scrape's answer (target ≤ 100 MB RSS above the start).
fn serve() {
    let base = rss_kb("VmRSS:");
    let now = data::now();
    let mut held = Vec::new();
    let mut published = Vec::new();
    for c in 0..3 {
        let profile = format!("prod-{c}");
        let report = data::report(&profile, 1000, now);
        published.push(std::sync::Arc::new(floe::serve::Published::of(
            &profile,
            std::time::Duration::from_secs(120),
            floe::serve::families(&report),
        )));
        let records: Vec<_> = (0..1000).map(data::stats).collect();
        let cached: Vec<_> = (0..1000).map(data::stats).collect();
        held.push((records, cached));
    }
    let scrape = floe::serve::render(&published, floe::serve::Format::Text, now, true);
    let loaded = rss_kb("VmRSS:");
    println!("memory: floe serve, 3 clusters x 1,000 tables");
    println!(
        "  RSS held    {:>7.1} MB (+{:.1} MB; one scrape {:.1} MB, {} lines; target ≤ 100 MB)",
        loaded as f64 / 1024.0,
        (loaded.saturating_sub(base)) as f64 / 1024.0,
        scrape.len() as f64 / 1e6,
        scrape.lines().count()
    );
    std::hint::black_box((&held, &published, &scrape));
}
