//! The checks of the `[[schedules]]` section: unique one-line names, a 5-field cron that fires
//! at all, an IANA zone, a prompt, and a target conversation on a channel this config runs. The
//! scheduler owns these rules (its cron and job rules); config only holds the data and calls
//! this through `app::CONFIG_CHECKS`.
//!
//! Every problem names its key and says what to do. This must never change the config or touch
//! the store; it reads only the clock (a cron must fire after now).

use super::{cron, jobs};
use crate::clock::now_ms;
use crate::config::{ChannelChecks, Config, Problems};

/// `[[schedules]]`: unique one-line names, a 5-field cron that fires at all, an IANA zone, a
/// prompt, and a target conversation on a channel this config runs.
pub fn check_config(cfg: &Config, channels: &dyn ChannelChecks, p: &mut Problems) {
    let running = channels.running(&cfg.channels);
    let mut seen = std::collections::BTreeSet::new();
    for (i, s) in cfg.schedules.iter().enumerate() {
        let key = |k: &str| format!("schedules[{i}].{k}");
        match jobs::check_name(&s.name) {
            Err(e) => p.add(key("name"), e.to_string()),
            Ok(name) if !seen.insert(name.clone()) => {
                p.add(key("name"), format!("`{name}` is used by an earlier [[schedules]] entry; names must be unique"))
            }
            Ok(_) => {}
        }
        let tz = cron::parse_tz(&s.tz);
        if let Err(e) = &tz {
            p.add(key("tz"), e.to_string());
        }
        match (cron::parse_cron(&s.cron), tz) {
            (Err(e), _) => p.add(key("cron"), e.to_string()),
            (Ok(c), Ok(tz)) if cron::next_after(&c, tz, now_ms()).is_none() => {
                p.add(key("cron"), format!("`{}` never fires (no such date)", s.cron))
            }
            _ => {}
        }
        if s.prompt.trim().is_empty() {
            p.add(key("prompt"), "must not be empty; it is what the agent is asked at each fire time");
        }
        match jobs::check_target(&s.target.to_string()) {
            Err(e) => p.add(key("target"), e.to_string()),
            Ok(t) if !running.contains(&t.channel) => p.add(
                key("target"),
                format!(
                    "is on the channel `{}`, which this config does not run; configure it, or deliver to a \
                     web conversation such as web:briefings",
                    t.channel
                ),
            ),
            Ok(t) => {
                if let Some(why) = channels.refuse_target(&cfg.channels, &t) {
                    p.add(key("target"), why);
                }
            }
        }
    }
}
