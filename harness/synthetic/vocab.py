"""Every word list the generator draws from. Pure data, no logic.

Planted material and filler draw from disjoint vocabularies, so a planted phrase cannot be
produced by filler by accident (the validator's ``no_accidental_markers`` check proves it
on every written corpus rather than trusting this comment):

* aggregation markers are ``the {CODENAME_A} {CODENAME_B} {MARKER_NOUN}``, e.g. "the Cedar
  Lantern compliance audit"; no codename word appears anywhere else (names, vendors,
  filler);
* lookup subjects and multi-file topics are ``the {AREA} {ARTIFACT}``, e.g. "the loading
  dock scheduling rules"; filler never names an area.

Tuples, never sets: iteration order is part of the output bytes.
"""

from __future__ import annotations

TEAMS: tuple[str, ...] = (
    "Logistics", "Payments", "Platform", "Mobile", "Analytics", "Security", "Support",
    "Infrastructure", "Growth", "Compliance", "Design", "Procurement", "Marketing", "Research",
)

KINDS: tuple[str, ...] = (
    "sprint retrospective", "vendor review board", "design review", "weekly standup",
    "incident postmortem", "quarterly planning", "budget review", "architecture review",
    "customer feedback review", "hiring committee", "release readiness", "roadmap sync",
)

FIRST_NAMES: tuple[str, ...] = (
    "Priya", "Tom", "Aisha", "Mateo", "Chen", "Fatima", "Lukas", "Sofia", "Kwame", "Ingrid",
    "Raj", "Elena", "Omar", "Hannah", "Diego", "Mei", "Jonas", "Amara", "Pavel", "Lucia",
    "Tariq", "Greta", "Hiroshi", "Nadia", "Samuel", "Leila", "Viktor", "Chloe", "Emeka", "Rosa",
    "Anders", "Yuki", "Bilal", "Clara", "Dmitri", "Zara", "Felix", "Nkechi", "Marco", "Ayesha",
    "Oskar", "Ines", "Jamal", "Freya", "Arjun", "Beatriz", "Kofi", "Hana", "Stefan", "Lina",
    "Rahul", "Maya", "Tomasz", "Esther", "Hugo", "Selin", "Andre", "Noor", "Erik", "Camila",
)

LAST_NAMES: tuple[str, ...] = (
    "Natarajan", "Becker", "Okafor", "Silva", "Wei", "Haddad", "Novak", "Rossi", "Mensah",
    "Larsen", "Kapoor", "Petrova", "Farouk", "Schmidt", "Alvarez", "Tanaka", "Berg", "Nwosu",
    "Horvat", "Moreno", "Aziz", "Lindqvist", "Sato", "Karimi", "Osei", "Rahman", "Kowalski",
    "Dubois", "Eze", "Castillo", "Nilsson", "Yamamoto", "Qureshi", "Fischer", "Ivanov", "Malik",
    "Brandt", "Adeyemi", "Conti", "Siddiqui", "Holm", "Ferreira", "Bakr", "Mehta", "Costa",
    "Boateng", "Kim", "Wagner", "Chowdhury", "Park", "Jensen", "Lopez", "Keller", "Banerjee",
    "Moretti", "Mwangi", "Ortiz", "Hoffmann", "Demir", "Varga",
)

VENDORS: tuple[str, ...] = (
    "Northwind Freight", "Bluepeak Systems", "Orbital Data", "Greenline Supplies",
    "Tessellate Labs", "Brightwater Services", "Fernhill Consulting", "Quayside Print",
    "Redbridge Security", "Lumen Analytics", "Stonegate Hosting", "Parkway Staffing",
    "Mosaic Cloud", "Tidewell Partners", "Larchmont Software", "Clearpath Couriers",
    "Halberd Networks", "Westmoor Facilities", "Ironbark Tools", "Kingsway Recruiting",
)

# --------------------------------------------------------------------------- planted vocab

CODENAME_A: tuple[str, ...] = (
    "Cedar", "Amber", "Cobalt", "Juniper", "Willow", "Copper", "Saffron", "Indigo", "Granite",
    "Marble", "Sable", "Aspen", "Birch", "Coral", "Ember", "Onyx", "Ivory", "Scarlet",
    "Crimson", "Velvet", "Misty", "Hollow", "Polar", "Rustic", "Lunar", "Solar", "Crystal",
    "Maple", "Olive", "Jade", "Pearl", "Azure", "Topaz", "Slate", "Frosty", "Thunder",
    "Autumn", "Wintry", "Cinder", "Gilded", "Russet", "Umber", "Ochre", "Teal", "Sienna",
    "Obsidian", "Verdant", "Quartz", "Mahogany", "Tawny",
)

CODENAME_B: tuple[str, ...] = (
    "Lantern", "Falcon", "Meadow", "Beacon", "Summit", "Kestrel", "Otter", "Heron", "Compass",
    "Anchor", "Orchard", "Canyon", "Glacier", "Prairie", "Comet", "Quarry", "Badger", "Raven",
    "Sparrow", "Lynx", "Bison", "Pelican", "Cascade", "Ridgeline", "Grove", "Horizon", "Tundra",
    "Marshland", "Osprey", "Puffin", "Walrus", "Condor", "Mantis", "Starling", "Thistle",
    "Bramble", "Fjord", "Lagoon", "Atlas", "Vortex", "Zephyr", "Nimbus", "Pylon", "Obelisk",
    "Citadel", "Trellis", "Keystone", "Rampart", "Gazebo", "Windmill",
)

MARKER_NOUNS: tuple[str, ...] = (
    "compliance audit", "pricing review", "migration plan", "security assessment",
    "vendor onboarding", "capacity study", "pilot program", "data cleanup", "contract renewal",
    "tooling upgrade", "support rotation", "partner integration", "cost review", "access review",
    "retention study", "hiring plan", "warehouse move", "licence renewal", "brand refresh",
    "certification audit", "procurement review", "network upgrade", "billing overhaul",
    "quality audit", "training rollout", "office move", "platform sunset", "research sprint",
)

AREAS: tuple[str, ...] = (
    "loading dock", "returns desk", "night shift", "supplier portal", "billing export",
    "mobile checkout", "staff rota", "help centre", "invoice queue", "sensor fleet",
    "parts catalogue", "claims intake", "partner dashboard", "signup funnel", "search ranking",
    "pricing page", "audit trail", "cold storage", "field crew", "ticket triage", "payroll run",
    "expense policy", "badge access", "data warehouse", "email digest", "release train",
    "trial accounts", "refund flow", "delivery windows", "route planner", "spare parts",
    "crash reporting", "login page", "feature toggles", "backup jobs", "cost centre",
    "vendor list", "interview loop", "offer letters", "style guide", "courier network",
    "fraud screening", "pager duty", "test fleet", "loyalty scheme", "survey panel",
    "consent banner", "ledger sync", "print queue", "candidate pipeline", "stock counts",
    "returns portal", "chat widget", "tax filing", "desk booking", "meal vouchers", "app onboarding",
    "driver app", "contract archive", "travel booking", "asset register", "customer portal",
)

ARTIFACTS: tuple[str, ...] = (
    "scheduling rules", "escalation path", "staffing plan", "approval flow", "naming scheme",
    "retention policy", "handover checklist", "error budget", "pricing model", "access rules",
    "review cadence", "alert thresholds", "rollout plan", "migration script", "cleanup job",
    "budget split", "training guide", "test coverage", "support hours", "capacity forecast",
    "data model", "signoff process", "ownership map", "priority labels", "feedback survey",
    "cutover checklist", "exception list", "audit sampling", "queue limits", "shift pattern",
    "runbook draft", "tagging scheme", "sampling plan", "fallback procedure", "quota model",
    "reporting format", "vendor shortlist", "intake form", "backlog rules", "rollback plan",
    "usage caps", "pilot scope", "success criteria", "cost model", "onboarding flow",
    "holiday cover", "translation backlog", "storage quota", "handoff template", "lessons log",
    "upgrade path", "pairing schedule", "triage rota", "contact list", "refresh cycle",
    "sunset notice", "review checklist", "pricing tiers", "service catalogue", "freeze window",
)

# Lookup facts: a value slot per fact type (see planting.py for the sentences).
MONTHS: tuple[str, ...] = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)

RISKS: tuple[str, ...] = (
    "that nobody on call knows the old system", "losing two weeks to the holiday freeze",
    "the legal review dragging on", "running out of test devices", "a single supplier for the parts",
    "people skipping the training", "the numbers from finance being stale",
    "customers noticing the change before support does", "the contract ending mid-quarter",
    "too many manual steps on the weekend", "the new hires not being ready in time",
    "the pilot site closing for renovation", "duplicate records in the export",
    "the budget being cut after the reorg", "a dependency on the old reporting server",
)

CONCLUSIONS: tuple[str, ...] = (
    "we'll run a two-week trial first", "we keep the current setup until the audit is done",
    "we split the work between two squads", "we drop the manual step entirely",
    "we ask finance for a second quote", "we write it up properly before anyone builds anything",
    "we pause it until the new lead starts", "we go with the simpler option",
    "we pilot it with one region only", "we hand it over to the platform folks",
    "we need a decision from the directors", "we bring it back with real numbers next time",
    "we merge it with the existing process", "we accept the delay and tell customers",
    "we automate the reminders first", "we shelve it for this quarter",
    "we double the review slots for a month", "we make it opt-in for now",
    "we measure the baseline before changing anything", "we cap it at three weeks",
    "we get legal to look at it first", "we train the leads before the rollout",
    "we go ahead but keep the old path as a fallback", "we rotate the owner every sprint",
    "we publish a short FAQ before launch", "we stop the experiment and revert",
    "we move the deadline rather than cut scope", "we run it past the customer panel",
)

R5_VERBS: tuple[tuple[str, str], ...] = (
    ("defer", "deferred"), ("escalate", "escalated"), ("postpone", "postponed"),
    ("revisit", "revisited"), ("flag", "flagged"), ("park", "parked"),
)

# --------------------------------------------------------------------------- filler vocab

KIND_THINGS: dict[str, tuple[str, ...]] = {
    "sprint retrospective": (
        "the burndown chart", "our velocity", "the action items from last time", "the carry-over tickets",
        "the definition of done", "the standup format", "the review queue", "the flaky tests",
        "the pairing rota", "the story points", "the sprint goal", "the demo prep",
    ),
    "vendor review board": (
        "the contract terms", "the service levels", "the pricing tiers", "the renewal notice",
        "the invoice disputes", "the account manager", "the penalty clauses", "the security questionnaire",
        "the reference calls", "the usage report", "the support tickets we raised", "the exit clause",
    ),
    "design review": (
        "the wireframes", "the empty states", "the colour contrast", "the component library",
        "the user flows", "the copy on the settings screen", "the prototype", "the icon set",
        "the mobile layout", "the error messages", "the research notes", "the handoff file",
    ),
    "weekly standup": (
        "the ticket I picked up", "the deploy from yesterday", "the open pull requests",
        "the review I owe", "the blocked ticket", "the on-call handover", "the test environment",
        "the bug from Tuesday", "the small refactor", "the docs update", "the customer escalation",
        "the build times",
    ),
    "incident postmortem": (
        "the timeline", "the alert that fired late", "the status page", "the root cause",
        "the rollback", "the paging policy", "the customer impact", "the runbook",
        "the detection gap", "the follow-up tickets", "the dashboard we lacked", "the comms plan",
    ),
    "quarterly planning": (
        "the headcount ask", "the roadmap themes", "the carry-over from last quarter",
        "the dependencies on other teams", "the stretch goals", "the capacity numbers",
        "the objectives draft", "the big bets", "the maintenance budget", "the hiring timeline",
        "the risk list", "the launch dates",
    ),
    "budget review": (
        "the travel spend", "the software licences", "the contractor costs", "the forecast",
        "the underspend", "the cloud bill", "the training budget", "the purchase orders",
        "the accruals", "the variance report", "the equipment refresh", "the savings target",
    ),
    "architecture review": (
        "the service boundaries", "the message queue", "the caching layer", "the schema change",
        "the read replicas", "the failover design", "the API versioning", "the batch jobs",
        "the latency budget", "the storage costs", "the dependency graph", "the load test",
    ),
    "customer feedback review": (
        "the survey results", "the support themes", "the feature requests", "the churn interviews",
        "the app store reviews", "the complaints about onboarding", "the net promoter score",
        "the sales call notes", "the accessibility feedback", "the pricing complaints",
        "the beta feedback", "the top ten requests",
    ),
    "hiring committee": (
        "the job description", "the take-home exercise", "the interview panel", "the scorecards",
        "the candidate feedback", "the referral bonus", "the offer approval", "the sourcing numbers",
        "the onsite schedule", "the bar raiser notes", "the recruiter update", "the headcount plan",
    ),
    "release readiness": (
        "the release notes", "the regression suite", "the go/no-go list", "the feature freeze",
        "the staged rollout", "the smoke tests", "the known issues", "the support briefing",
        "the translation strings", "the app review", "the migration window", "the kill switch",
    ),
    "roadmap sync": (
        "the roadmap slide", "the priorities list", "the customer commitments", "the dependency map",
        "the themes for next half", "the sequencing", "the trade-offs", "the stakeholder asks",
        "the discovery work", "the parking lot", "the success metrics", "the timeline view",
    ),
}

GENERIC_THINGS: tuple[str, ...] = (
    "the agenda", "the handover notes", "the ticket backlog", "the on-call rota", "the shared drive",
    "the dashboard", "the test plan", "the status update", "the spreadsheet", "the board",
    "last week's numbers", "the customer emails", "the onboarding doc", "the open questions",
    "the risk register", "the follow-ups", "the draft", "the slides", "the timeline", "the estimate",
    "the meeting notes", "the summary email", "the calendar invites", "the feedback form",
    "the tracker", "the weekly report", "the decision log", "the request from sales",
    "the numbers from finance", "the template", "the checklist", "the wiki page", "the budget line",
    "the handbook", "the metrics", "the pilot results", "the migration", "the new process",
    "the workaround", "the priorities", "the access requests", "the training session",
)

SUBJECT_MODALS: tuple[str, ...] = (
    "we should", "we could", "we need to", "we might want to", "I can", "I'll", "I was going to",
    "we have to", "someone should", "you could", "they want us to", "we probably need to",
    "it might be worth it to", "I'd like to", "we were supposed to",
)

VERBS: tuple[str, ...] = (
    "look at", "tidy up", "write up", "double-check", "sort out", "push back on", "split up",
    "dig into", "sign off on", "go over", "clean up", "hand over", "simplify", "reprioritise",
    "document", "test", "measure", "estimate", "book time for", "agree on", "review", "settle",
    "map out", "trim", "rework", "pair on", "follow up on", "close out", "share", "update",
)

WHEN: tuple[str, ...] = (
    "this week", "before Friday", "next sprint", "by the end of the month", "after the holidays",
    "tomorrow", "later today", "before the next session", "in the next couple of weeks",
    "once we hear back", "early next week", "before we commit to anything", "after the offsite",
    "as soon as possible", "when things calm down", "before the freeze",
)

ASSESSMENTS: tuple[str, ...] = (
    "in decent shape", "a bit behind", "mostly done", "still pretty rough", "on track",
    "blocked on legal", "bigger than we thought", "fine for now", "not urgent",
    "more urgent than it looks", "basically finished", "waiting on review", "a mess, honestly",
    "better than last time", "hard to read", "good enough for a first pass",
)

PROBLEMS: tuple[str, ...] = (
    "keeps slipping", "is eating a lot of time", "hasn't had an owner for a while", "is confusing people",
    "doesn't match what customers see", "is half finished", "got dropped last time",
    "depends on people who are away", "needs another pass", "is out of date again",
)

TRENDS: tuple[str, ...] = (
    "better", "flat", "a bit worse", "noisy", "odd this week", "about the same", "much better",
    "slightly up", "down a little",
)

PAST: tuple[str, ...] = (
    "last sprint", "the offsite", "the last review", "before the freeze", "the holidays",
    "the reorg", "the kickoff", "the last release", "we moved desks", "the audit",
)

UNITS: tuple[str, ...] = (
    "percent", "tickets", "hours", "days", "requests", "people", "items", "calls", "points",
)

PROCESS_ACTIONS: tuple[str, ...] = (
    "share my screen", "pull up the notes", "check the ticket", "find the link", "put that in the chat",
    "take an action on that", "add it to the list", "grab the numbers", "open the doc",
    "write that down", "message them after this", "check my calendar",
)

OPENERS: tuple[str, ...] = (
    "", "", "", "So ", "Okay, so ", "I mean, ", "Honestly, ", "Yeah, ", "Right, so ", "Well, ",
    "To be fair, ", "Just quickly, ", "For what it's worth, ", "Actually, ", "Look, ", "Hmm. ",
    "Fair enough. ", "Mm, ",
)

SHORT_REPLIES: tuple[str, ...] = (
    "Yeah.", "Okay.", "Sure.", "Makes sense.", "Agreed.", "Fair.", "Yep, that works.",
    "I can do that.", "Good point.", "Hmm, maybe.", "Not sure, honestly.", "Let's do that.",
    "Sounds good.", "Same here.", "Got it, thanks.", "Right, okay.", "That works for me.",
    "No objections.", "I think so, yeah.", "Can you say that again?", "Sorry, you cut out there.",
    "Oh, interesting.", "Fine by me.", "Yes, definitely.", "I'm not convinced.", "Good, thanks.",
    "Wait, which one?", "That's fair.", "Hmm.", "Okay, cool.",
)

BACKCHANNELS: tuple[str, ...] = (
    "Uh-huh.", "Right.", "Mm-hmm.", "Yeah.", "Okay.", "Sure.", "Exactly.", "Yep.", "Mhm.", "True.",
)

COLLISIONS: tuple[str, ...] = (
    "Sorry, go ahead.", "Oh, sorry.", "No, you go.", "Sorry, after you.", "Oh, go on.",
    "Ah, sorry, you first.",
)

OPENINGS: tuple[str, ...] = (
    "Okay, shall we get started?", "Right, let's kick off.", "Morning, everyone. Let's begin.",
    "Hi all, thanks for joining.", "Okay, I think we have enough people. Let's start.",
    "Let's get going, we have a lot to cover.", "Afternoon, everyone. Shall we?",
)

CLOSINGS: tuple[str, ...] = (
    "Okay, thanks everyone.", "Great, that's time. Thanks, all.", "Let's wrap up there. Thanks.",
    "Good session. See you next time.", "Thanks, everyone. I'll send the notes round.",
)
