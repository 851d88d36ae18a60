
admin_scriptá
script}"{fs.log.purge -daysAgo=7
volume.deleteEmpty -quietFor=24h -apply
volume.fix.replication -apply
s3.clean.uploads -timeAgo=24h
run_interval_minutes*¨ (0@HàPà2∏îêÿ”≈õ√:plugin