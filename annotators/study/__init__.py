"""Running a study (SPEC 7): its settings, entry links from crowdsourcing platforms, the session
quota and its completion codes, time on task and pay."""
