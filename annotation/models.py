"""The annotation data model.

Example (P, H, optional U) -> Atom (pieces of H) -> Item (what one annotator answers)
Assignment (one claimed page of k items for one worker) -> Claim (an item on that page)
Annotation (one worker's answer to one item; imported labels have no worker)
"""

import secrets

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q


def new_annotator_key() -> str:
    return secrets.token_hex(32)


class Project(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft"  # invisible to workers, freely editable
        PUBLISHED = "published"  # takes claims
        PAUSED = "paused"  # no new pages; pages already handed out may still be submitted
        CLOSED = "closed"  # read-only

    class Audience(models.TextChoices):
        EVERYONE = "everyone", "all workers"
        MEMBERS = "members", "members only"
        PLATFORM = "platform", "arrivals through a Prolific or MTurk link only"
        PROLIFIC = "prolific", "arrivals through a Prolific link only"
        MTURK = "mturk", "arrivals through an MTurk link only"

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    # A name of annotation.tasktypes.TASK_TYPES; checked there, not as model choices, so that adding a
    # task type needs no migration.
    task_type = models.CharField(max_length=32)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="projects")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    audience = models.CharField(max_length=10, choices=Audience.choices, default=Audience.EVERYONE)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="member_projects")
    member_groups = models.ManyToManyField("auth.Group", blank=True, related_name="member_projects")
    instructions = models.TextField(blank=True)
    items_per_page = models.PositiveSmallIntegerField(default=5)
    # Annotations every item gets before the disagreement rule is asked; the cap bounds extra rounds.
    redundancy = models.PositiveSmallIntegerField(default=2)
    max_annotations = models.PositiveSmallIntegerField(default=3)
    # Task-type settings (slider threshold, label set, ...), validated by the task type module.
    options = models.JSONField(default=dict, blank=True)
    claim_timeout_minutes = models.PositiveIntegerField(default=30)
    qualification = models.ForeignKey(
        "QualificationTest", on_delete=models.SET_NULL, null=True, blank=True, related_name="projects"
    )
    # Quality control: share of pages that carry one hidden gold item, and the gold accuracy under which
    # a worker is suspended once they have answered gold_min_checks gold items (0 disables suspension).
    gold_rate = models.FloatField(default=0.0)
    gold_min_checks = models.PositiveSmallIntegerField(default=3)
    suspend_below = models.FloatField(default=0.0)
    # EASL-style adaptive pages (slider projects): after a first round, serve the most uncertain items.
    adaptive = models.BooleanField(default=False)
    # Where this project's answers are validated (written hypotheses go to a labelling project); see
    # annotation.services.linking.
    validation_project = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="validates"
    )
    # What workers see now (instructions, worked examples, the settings they answer with): the version each
    # new page records (annotation.services.instrument).
    instrument = models.ForeignKey(
        "InstrumentVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Key of the anonymised annotator ids in this study's exports (a keyed hash of the worker's account id):
    # stable across exports and formats, different in every study, never the platform's ID.
    annotator_key = models.CharField(max_length=64, default=new_annotator_key, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("export_any_project", "Can export any project's dataset")]

    def __str__(self) -> str:
        return self.slug

    @property
    def task(self):
        from annotation.tasktypes import get_task_type

        return get_task_type(self.task_type)

    @property
    def task_installed(self) -> bool:
        """Whether this study's task type is registered: false for a feature app's type while the app is left
        out of INSTALLED_APPS (services.access then serves the study nowhere)."""
        from annotation.tasktypes import TASK_TYPES

        return self.task_type in TASK_TYPES


class Example(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="examples")
    # Natural key within the project: the source id, or a content hash; it makes re-imports no-ops.
    key = models.CharField(max_length=200)
    source_id = models.CharField(max_length=200, blank=True)
    premise = models.TextField()
    hypothesis = models.TextField()
    update = models.TextField(blank=True)
    update_type = models.CharField(max_length=20, blank=True)
    # The row's label in canonical form (annotation.tasktypes: TaskType.example_labels), "" when it had none.
    source_label = models.CharField(max_length=40, blank=True)
    # The row's probability (U-SNLI's unli) as the file wrote it, "" when it had none.
    source_probability = models.CharField(max_length=40, blank=True)
    # The format the row was imported in, and what it carried beyond the columns above: kept so that an export
    # in that format (and the complete jsonl export) gives it back unchanged.
    source_format = models.CharField(max_length=20, blank=True)
    source_data = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)
    # An example made from another project's answer (a written sentence sent to validation): that answer
    # and the target it was written for.
    origin = models.ForeignKey(
        "Annotation", on_delete=models.SET_NULL, null=True, blank=True, related_name="validation_examples"
    )
    origin_target = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="example_key_unique")]

    def __str__(self) -> str:
        return self.source_id or self.key

    @classmethod
    def from_source(cls, source, project: Project | None, position: int) -> "Example":
        """An unsaved example in `project` with the texts and source fields of `source`: another study's
        example (a clone, atoms sent on) or an imported row (dataset_io's ExampleRow names them alike). Its
        origin is not copied: the new example is not written from an answer."""
        return cls(
            project=project,
            key=source.key,
            source_id=source.source_id,
            premise=source.premise,
            hypothesis=source.hypothesis,
            update=source.update,
            update_type=source.update_type,
            source_label=source.source_label,
            source_probability=source.source_probability,
            source_format=source.source_format,
            source_data=source.source_data,
            position=position,
        )


class Atom(models.Model):
    class Validity(models.TextChoices):
        UNKNOWN = "unknown"
        VALID = "valid"
        INVALID = "invalid"

    example = models.ForeignKey(Example, on_delete=models.CASCADE, related_name="atoms")
    text = models.TextField()
    order = models.PositiveSmallIntegerField(default=0)
    validity = models.CharField(max_length=10, choices=Validity.choices, default=Validity.UNKNOWN)
    # Gold effect of the update on this atom, -2..+2, when the source gives one.
    effect = models.SmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["example_id", "order"]
        constraints = [models.UniqueConstraint(fields=["example", "text"], name="atom_text_unique")]

    def __str__(self) -> str:
        return self.text


class Item(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"  # still collecting annotations
        DONE = "done"  # aggregate is final
        ADJUDICATION = "adjudication"  # the policy could not settle it; an author decides

    # Each index is written on every claim and submit: item_status_idx (project, status) serves the project too.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items", db_index=False)
    example = models.ForeignKey(Example, on_delete=models.CASCADE, related_name="items")
    atom = models.ForeignKey(Atom, on_delete=models.CASCADE, null=True, blank=True, related_name="items")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    # How many annotations this item should get now; the redundancy policy raises it on disagreement.
    target = models.PositiveSmallIntegerField(default=2)
    annotation_count = models.PositiveIntegerField(default=0)
    active_claims = models.PositiveSmallIntegerField(default=0)
    # True while target > annotations + active claims: the claim query reads only these rows.
    claimable = models.BooleanField(default=True)
    # Items of one coherence group never share a page or a worker at the same time.
    coherence_group = models.CharField(max_length=100, blank=True)
    # Lower is served first (adaptive pages raise the priority of uncertain items).
    priority = models.FloatField(default=0.0)
    aggregate = models.JSONField(null=True, blank=True)
    adjudicated = models.JSONField(null=True, blank=True)
    # Picked by an author for adjudication although the redundancy policy settled it.
    flagged = models.BooleanField(default=False)
    # Gold check items carry a reference answer; they are mixed into pages and never count as data.
    is_gold = models.BooleanField(default=False)
    gold = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["project", "priority", "id"], condition=Q(claimable=True), name="item_claimable_idx"),
            models.Index(fields=["project", "status"], name="item_status_idx"),
            models.Index(fields=["project"], condition=Q(is_gold=True), name="item_gold_idx"),
            # The adjudication queue (analysis.adjudication.queue, the same condition): the dashboard counts it
            # from these few entries, not from every item of the study.
            models.Index(
                fields=["project"],
                condition=Q(is_gold=False) & (Q(status="adjudication") | Q(flagged=True)),
                name="item_adjudication_queue_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.pk}"

    def refresh_claimable(self) -> None:
        """Set `claimable` from the status and counters (open, with room for one more claim), the flag the
        claim query's partial index reads; claims, submits and expiries call this after changing them."""
        self.claimable = self.status == Item.Status.OPEN and self.annotation_count + self.active_claims < self.target

    @property
    def final_value(self):
        """The adjudicated label where an author set one, else the aggregate."""
        return self.adjudicated if self.adjudicated is not None else self.aggregate


class Assignment(models.Model):
    """One page of items claimed by one worker; it expires if not submitted in time."""

    class Status(models.TextChoices):
        OPEN = "open"
        SUBMITTED = "submitted"
        EXPIRED = "expired"
        RELEASED = "released"

    # assignment_worker_idx (project, worker, status) serves the project: no index of its own to keep up.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    late = models.BooleanField(default=False)
    # Fingerprint of the accepted answers: a repeated identical submit answers the same, stores nothing.
    submission_digest = models.CharField(max_length=64, blank=True)
    # The page's last sign of life in a browser (shown, a draft save or heartbeat); a page silent for the
    # project's abandon_after_minutes is released early. Null: never shown in a browser (an API client's).
    last_seen_at = models.DateTimeField(null=True, blank=True)
    # A page may be given more time once.
    extended = models.BooleanField(default=False)
    # The instructions and settings the page was shown with (the project's instrument when it was claimed).
    instrument = models.ForeignKey(
        "InstrumentVersion", on_delete=models.RESTRICT, null=True, blank=True, related_name="pages"
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "expires_at"], name="assignment_expiry_idx"),
            models.Index(fields=["project", "worker", "status"], name="assignment_worker_idx"),
            # The study's submitted pages by submit time: the median page time reads the latest of them.
            models.Index(
                fields=["project", "submitted_at"],
                condition=Q(status="submitted", submitted_at__isnull=False),
                name="assignment_submitted_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk}"


class PageDraft(models.Model):
    """Unsent answers of an open page, saved as the worker goes, so a reload or another tab restores them.
    Never an Annotation: it is deleted when the page is submitted, released or expires."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="draft")
    data = models.JSONField(default=dict)
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"draft of assignment {self.assignment_id}"


class Claim(models.Model):
    """An item on a claimed page. One per (item, worker): a worker never sees an item twice."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="claims")
    # The unique (item, worker) and claim_worker_item_idx (worker, item) serve each column alone too.
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="claims", db_index=False)
    worker = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="claims", db_index=False
    )
    position = models.PositiveSmallIntegerField()
    # A claim counts in item.active_claims exactly while its page (assignment) is open: the page's status is
    # the one record of it, so a submit or expiry changes no claim row.

    class Meta:
        ordering = ["assignment_id", "position"]
        constraints = [models.UniqueConstraint(fields=["item", "worker"], name="claim_item_worker_unique")]
        indexes = [models.Index(fields=["worker", "item"], name="claim_worker_item_idx")]


class AnnotationQuerySet(models.QuerySet):
    def counted(self):
        """The answers every aggregate, agreement figure, report and export count: not excluded (their worker
        was blocked with their answers left out) and not answers to gold checks, which are quality control.
        (The submit's settle_item reads `excluded=False` alone: it never settles a gold check, and the join
        would cost every submit.)"""
        return self.filter(excluded=False, item__is_gold=False)


class Annotation(models.Model):
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="annotations")
    # Null for labels imported with a dataset (ChaosNLI's 100 votes per item).
    worker = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="annotations"
    )
    assignment = models.ForeignKey(
        Assignment, on_delete=models.PROTECT, null=True, blank=True, related_name="annotations"
    )
    raw = models.JSONField(help_text="The answer as submitted")
    value = models.JSONField(help_text="The normalised value used for aggregation")
    reason = models.TextField(blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(auto_now_add=True)
    imported = models.BooleanField(default=False)
    # Imported votes are stored one row per distinct label with its count (ChaosNLI: 100 votes, <= 3 rows).
    count = models.PositiveIntegerField(default=1)
    late = models.BooleanField(default=False)
    # Left out of aggregates and agreement: its worker was blocked with their answers excluded. Kept, never
    # deleted, and counted back in when the worker is unblocked.
    excluded = models.BooleanField(default=False)

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        ordering = ["item_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "worker"], condition=Q(worker__isnull=False), name="annotation_item_worker_unique"
            )
        ]


class AdjudicationRecord(models.Model):
    """Every change of an item's final label: who, when, before, after and why. Never edited or deleted."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="adjudications")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications")
    before = models.JSONField(null=True)
    after = models.JSONField(null=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class QualificationTest(models.Model):
    """A page of reference items a worker must pass before working on the projects that use it."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    task_type = models.CharField(max_length=32)
    # The task type's settings the items are answered with (e.g. the label set of a 3-way project).
    options = models.JSONField(default=dict, blank=True)
    instructions = models.TextField(blank=True)
    max_attempts = models.PositiveSmallIntegerField(default=2)
    # Nominal and ordinal tasks: share of reference answers matched.
    min_accuracy = models.FloatField(default=0.8)
    # Slider: easy items within min(y, 1-y) / delta_divisor of y, and correlations over all items.
    delta_divisor = models.FloatField(default=4.0)
    # ... and never closer than this: min(y, 1-y) / divisor is 0 at a reference of 0 or 1.
    min_delta = models.FloatField(default=0.01)
    min_pearson = models.FloatField(default=0.7)
    min_spearman = models.FloatField(default=0.4)

    def __str__(self) -> str:
        return self.slug


class QualificationItem(models.Model):
    test = models.ForeignKey(QualificationTest, on_delete=models.CASCADE, related_name="items")
    premise = models.TextField()
    hypothesis = models.TextField()
    update = models.TextField(blank=True)
    atom_text = models.TextField(blank=True)
    # Normalised reference value: a probability for the slider, a label or an effect otherwise.
    reference = models.JSONField()
    easy = models.BooleanField(default=False)
    order = models.PositiveSmallIntegerField(default=0)
    # The study item this one was copied from (an explicit copy: a new item, the study's stays where it was).
    copied_from = models.ForeignKey("Item", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["test_id", "order", "id"]

    # The task templates read item.example.* and item.atom.text; a reference item plays both parts.
    @property
    def example(self):
        return self

    @property
    def atom(self):
        return type("AtomText", (), {"text": self.atom_text})()


class QualificationAttempt(models.Model):
    test = models.ForeignKey(QualificationTest, on_delete=models.CASCADE, related_name="attempts")
    worker = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="qualification_attempts"
    )
    answers = models.JSONField()
    passed = models.BooleanField()
    details = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["test", "worker", "passed"], name="attempt_worker_idx")]


class WorkerStatus(models.Model):
    """A worker's standing in one project: gold checks answered and whether they are suspended."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="worker_statuses")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_statuses")
    gold_answered = models.PositiveIntegerField(default=0)
    gold_correct = models.PositiveIntegerField(default=0)
    suspended = models.BooleanField(default=False)
    suspended_at = models.DateTimeField(null=True, blank=True)
    # Blocked by an author: no more claims; optionally their answers leave aggregates and agreement.
    blocked = models.BooleanField(default=False)
    blocked_at = models.DateTimeField(null=True, blank=True)
    blocked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    exclude_answers = models.BooleanField(default=False)
    # Why the author blocked the worker (shown with each of their answers in per-annotation exports).
    block_reason = models.TextField(blank=True)

    class Meta:
        verbose_name_plural = "worker statuses"  # not Django's "worker statuss"
        constraints = [models.UniqueConstraint(fields=["project", "worker"], name="worker_status_unique")]

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_correct / self.gold_answered if self.gold_answered else None


class CrowdSession(models.Model):
    """A participant who arrived through a crowd platform link (Prolific or MTurk): the account they work
    under in this one study, the platform session they are bound to, and their completion code.

    Crowd accounts are their own kind: made for one participant of one study (and the studies linked to it:
    the same platform identity arriving in a linked study is the same account; never looked up by username),
    with an unusable password and the worker role only; an entry link logs in nothing but its own account."""

    class Platform(models.TextChoices):
        PROLIFIC = "prolific"
        MTURK = "mturk"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="crowd_sessions")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="crowd_sessions")
    platform = models.CharField(max_length=10, choices=Platform.choices)
    participant_id = models.CharField(max_length=100)
    # The first platform session (Prolific STUDY_ID + SESSION_ID, MTurk hitId + assignmentId) binds the participant.
    study_id = models.CharField(max_length=100, blank=True)
    session_id = models.CharField(max_length=100, blank=True)
    # MTurk's turkSubmitTo (checked against MTURK_SUBMIT_HOSTS): where the finished HIT is posted.
    submit_to = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    completion_code = models.CharField(max_length=40, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "platform", "participant_id"], name="crowd_participant_once"),
            # One session per study; an account has several only in linked studies (crowd.linked_account).
            models.UniqueConstraint(fields=["worker", "project"], name="crowd_account_one_session_per_study"),
        ]


class InstrumentVersion(models.Model):
    """What workers of a study saw: its instructions, worked examples and the settings they answered with.
    Each page records the version it was shown with; changing them after pages were handed out makes a new
    version (annotation.services.instrument)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="instrument_versions")
    number = models.PositiveIntegerField()
    # SHA-256 of the content as canonical JSON: the version's name in exports.
    digest = models.CharField(max_length=64)
    content = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "number"]
        constraints = [models.UniqueConstraint(fields=["project", "number"], name="instrument_number_unique")]

    def __str__(self) -> str:
        return f"{self.project_id} v{self.number}"

    @property
    def short_digest(self) -> str:
        return self.digest[:16]


class AuditEntry(models.Model):
    """Who did what, when: exports, blocks, adjudications, settings changes and erasures. Written by
    annotation.services.audit only, never edited; readable by admins (Django admin and /audit/)."""

    class Action(models.TextChoices):
        EXPORT = "export"
        BLOCK = "block"
        UNBLOCK = "unblock"
        ADJUDICATE = "adjudicate"
        SETTINGS = "settings"
        ERASE = "erase"
        PROLIFIC = "prolific"  # details["operation"]: link, create, publish, approve, bonus-pay, ...
        MTURK = "mturk"  # details["operation"]: create_hit, approve_assignment, send_bonus, ...
        LINK = "link"  # details["operation"]: send_valid_atoms (annotation.services.atom_chain)

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # The account's name is copied: the entry keeps saying who even if the account is renamed or erased.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_name = models.CharField(max_length=150, help_text="the account, or 'command line'")
    action = models.CharField(max_length=20, choices=Action.choices)
    project = models.ForeignKey(Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    project_slug = models.CharField(max_length=80, blank=True)
    details = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["action", "-created_at"], name="audit_action_time")]
