use super::*;

#[tokio::test]
async fn a_plan_drafted_before_a_profile_switch_is_never_delivered_after_it() {
    let dir = std::env::temp_dir().join(format!("floe-rt-epoch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        "default_profile = \"a\"\n[trino]\nurl = \"http://127.0.0.1:9\"\n[profiles.a.trino]\nuser = \"a\"\n[profiles.b.trino]\nuser = \"b\"\n",
    )
    .unwrap();
    let over = config::Overrides {
        config: Some(path),
        ..Default::default()
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut rt = Runtime::new(config::load(&over).unwrap(), over, tx).unwrap();
    let mut loaded = rt.take_loaded_profiles();
    let before = rt.confirm_sender();
    rt.run(vec![Effect::SwitchProfile("b".into())]);
    // The profile is read off the event loop; the loop hands it back.
    let switched = rt.finish_switch(loaded.recv().await.unwrap());
    assert!(matches!(
        switched,
        Action::Connection(ConnectionMsg::ProfileSwitched(Ok(_)))
    ));
    before(Action::Drawn(std::time::Instant::now()));
    let after = rt.confirm_sender();
    after(Action::Start);
    assert!(
        matches!(rx.recv().await, Some(Action::Start)),
        "only the new one"
    );
    assert!(rx.try_recv().is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_hung_password_command_does_not_stop_the_event_loop() {
    let dir = std::env::temp_dir().join(format!("floe-rt-vault-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        "default_profile = \"a\"\n[trino]\nurl = \"https://127.0.0.1:9\"\n[profiles.a.trino]\nuser = \"a\"\n[profiles.b.trino]\nuser = \"b\"\npassword_command = \"sleep 2; echo pw\"\n",
    )
    .unwrap();
    let over = config::Overrides {
        config: Some(path),
        ..Default::default()
    };
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut rt = Runtime::new(config::load(&over).unwrap(), over, tx).unwrap();
    let mut loaded = rt.take_loaded_profiles();
    let started = std::time::Instant::now();
    rt.run(vec![Effect::SwitchProfile("b".into())]);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "the switch returned only after {:?}: the vault ran on the event loop",
        started.elapsed()
    );
    let switched = rt.finish_switch(loaded.recv().await.unwrap());
    assert!(
        matches!(
            switched,
            Action::Connection(ConnectionMsg::ProfileSwitched(Ok(_)))
        ),
        "{switched:?}"
    );
    assert!(started.elapsed() >= Duration::from_secs(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
