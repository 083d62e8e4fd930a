"""Legal holds in the admin: the Compliance group places them (the add form) and releases them
(the release field of an active hold's page, with a reason); nobody edits or deletes one. Pages
that show a person's or a session's data show the holds on it (``HeldPage``).

What a hold covers is chosen, never inferred from a blank box: the whole tenant, one person (their
user id exactly as typed: ``agentstate.identifiers``) or one session (named by its session id, as the
API names it). Holds show the ids they name with their invisible characters spelled out."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Model, OuterRef, QuerySet, Subquery
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from agentstate import subject_data
from agentstate.admin.display import identifier_display, identifier_html
from agentstate.exceptions import InvalidInput
from agentstate.holds import services
from agentstate.holds.models import LegalHold
from agentstate.identifiers import IdentifierFormField
from agentstate.validation import identifier_visible

TENANT, PERSON, SESSION = "tenant", "person", "session"
# What a hold can cover (as ``LegalHold.covers`` says it), the ids each choice needs and those it may name.
COVERS = {TENANT: "the whole tenant", PERSON: "one person", SESSION: "one session"}
IDS = {TENANT: ((), ()), PERSON: (("user_id",), ()), SESSION: (("user_id", "session_id"), ("app_name",))}


def session_model() -> type[Model]:
    """What a session hold's ``session_pk`` names: the row the map's ``via`` chains hang off."""
    [root] = {d.root for d in subject_data.declared() if d.via}
    return root


class LegalHoldPlaceForm(forms.ModelForm):
    """A hold to place. A blank user id never means "everyone": the tenant is a choice of its own."""

    covers = forms.ChoiceField(
        choices=[
            (TENANT, "the whole tenant: every person's data"),
            (PERSON, "one person: everything of one user id"),
            (SESSION, "one session, with everything in it"),
        ],
        widget=forms.RadioSelect,
        help_text="What the hold keeps from deletion.",
    )
    session_id = IdentifierFormField(
        required=False, label="Session id", help_text="A session hold: the session's id as the API names it."
    )
    app_name = IdentifierFormField(
        required=False,
        label="App name",
        help_text="A session hold on a Google ADK session: its app. Empty for the REST API's and other sessions.",
    )

    class Meta:
        model = LegalHold
        fields = ("tenant", "user_id", "reference", "reason")
        help_texts = {
            "user_id": "A person's or a session's hold: exactly as the API stored it (spaces and case count)."
        }

    def clean(self) -> dict[str, Any]:
        """The ids the choice needs and no other, then the service's own rules beside their fields."""
        cleaned = super().clean() or {}
        covers = cleaned.get("covers")
        if covers in IDS:
            required, optional = IDS[covers]
            for name in ("user_id", "session_id", "app_name"):
                value = cleaned.get(name)
                label = self.fields[name].label or name
                if name in required and value == "":
                    self.add_error(
                        name, f"Give the {label.lower()} for a hold on {COVERS[covers]}, as the API stored it."
                    )
                elif name not in required + optional and value:
                    self.add_error(
                        name,
                        f"A hold on {COVERS[covers]} names no {label.lower()}: clear it, or change what it covers.",
                    )
        if covers == SESSION and not self.errors:
            cleaned["session_pk"] = self._session_pk(cleaned)
        if covers == PERSON and not self.errors:
            try:  # " alice" is a person of her own when data is held under her; else a slip for "alice"
                subject_data.subject_id_check(tenant=cleaned["tenant"], user_id=cleaned["user_id"])
            except InvalidInput as exc:
                self.add_error("user_id", exc.fields["user_id"])
        if not self.errors:
            try:
                services.legal_hold_clean(
                    **{name: cleaned.get(name) or "" for name in ("reference", "reason", "user_id")},
                    session_pk=cleaned.get("session_pk"),
                )
            except InvalidInput as exc:
                for name, errors in exc.fields.items():
                    self.add_error(name if name in self.fields else None, errors)
        return cleaned

    def _session_pk(self, cleaned: dict[str, Any]) -> int | None:
        """The session the ids name, or the error that says which ids do name one."""
        tenant, user_id, session_id = cleaned["tenant"], cleaned["user_id"], cleaned["session_id"]
        sessions = session_model()._default_manager.filter(tenant=tenant, user_id=user_id, session_id=session_id)
        found = dict(sessions.values_list("app_name", "pk"))
        if cleaned.get("app_name", "") in found:
            return found[cleaned.get("app_name", "")]
        where = f"user {identifier_visible(user_id)} of tenant {tenant.slug}"
        if found:
            apps = ", ".join(identifier_visible(app) or "(none)" for app in sorted(found))
            self.add_error("app_name", f"Session {identifier_visible(session_id)} of {where} is in app: {apps}.")
        else:
            self.add_error("session_id", f"No session {identifier_visible(session_id)} of {where}.")
        return None


class LegalHoldReleaseForm(forms.ModelForm):
    release_reason_given = forms.CharField(
        label="release with reason",
        required=False,  # the service's own message when blank
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Releasing lets retention, erasure and deletions reach the data again. The hold stays, released.",
    )

    class Meta:
        model = LegalHold
        fields = ()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        try:
            cleaned["release_reason_given"] = services.required(
                cleaned.get("release_reason_given"), field="release_reason_given"
            )
        except InvalidInput as exc:
            self.add_error("release_reason_given", exc.fields["release_reason_given"])
        return cleaned


@admin.register(LegalHold)
class LegalHoldAdmin(admin.ModelAdmin):
    list_display = ("reference", "tenant", "covers_shown", "active", "placed_at", "placed_by_name", "released_at")
    list_filter = (("released_at", admin.EmptyFieldListFilter), "tenant")
    list_select_related = ("tenant",)
    search_fields = ("reference",)
    ordering = ("-placed_at",)
    user_id_shown = identifier_display("user_id", description="user id", length=True)

    @admin.display(boolean=True, description="active")
    def active(self, obj: LegalHold) -> bool:
        return obj.is_active

    def get_queryset(self, request: HttpRequest) -> QuerySet[LegalHold]:
        """Each hold with the session id (and app) of the session it names, in the list's one query."""
        session = session_model()._default_manager.filter(pk=OuterRef("session_pk"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                session_id_named=Subquery(session.values("session_id")[:1]),
                app_name_named=Subquery(session.values("app_name")[:1]),
            )
        )

    @admin.display(description="covers")
    def covers_shown(self, obj: LegalHold) -> SafeString | str:
        """What the hold covers, naming the person and the session by the ids the API uses."""
        if obj.session_pk is not None:
            return format_html("one session: {} of user {}", self.session_shown(obj), identifier_html(obj.user_id))
        if obj.user_id:
            return format_html("one person: user {}", identifier_html(obj.user_id))
        return obj.covers

    @admin.display(description="session")
    def session_shown(self, obj: LegalHold) -> SafeString | str:
        """The session's id (and app), linked to its page; its number once it is gone."""
        if obj.session_pk is None:
            return "—"
        session_id = getattr(obj, "session_id_named", None)
        if session_id is None:
            return f"#{obj.session_pk} (no longer kept)"
        app = getattr(obj, "app_name_named", "")
        shown = format_html(
            "{}{}", identifier_html(session_id), format_html(" in app {}", identifier_html(app)) if app else ""
        )
        opts = session_model()._meta
        try:
            url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.session_pk])
        except NoReverseMatch:
            return shown
        return format_html('<a href="{}">{}</a>', url, shown)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        kwargs["form"] = LegalHoldPlaceForm if obj is None else LegalHoldReleaseForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Model | None = None) -> list[Any]:
        if obj is None:
            return ["tenant", "covers", "user_id", "session_id", "app_name", "reference", "reason"]
        fields = ["tenant", "covers_shown", "user_id_shown", "session_shown", "reference", "reason"]
        fields += ["placed_at", "placed_by_name"]
        if isinstance(obj, LegalHold) and obj.is_active:
            return [*fields, "release_reason_given"]
        return [*fields, "released_at", "released_by_name", "release_reason"]

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        if obj is None:
            return []
        return [f for f in self.get_fields(request, obj) if f != "release_reason_given"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("holds.place_legalhold")

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        active = obj is None or (isinstance(obj, LegalHold) and obj.is_active)
        return active and request.user.has_perm("holds.release_legalhold")

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False  # released, never deleted

    def save_model(self, request: HttpRequest, obj: LegalHold, form: forms.ModelForm, change: bool) -> None:
        if change:
            services.legal_hold_release(hold=obj, reason=form.cleaned_data["release_reason_given"], actor=request.user)
            return
        placed = services.legal_hold_place(
            tenant=obj.tenant,
            user_id=obj.user_id,
            session_pk=form.cleaned_data.get("session_pk"),
            reference=obj.reference,
            reason=obj.reason,
            actor=request.user,
        )
        obj.pk, obj.placed_at, obj.placed_by_name = placed.pk, placed.placed_at, placed.placed_by_name
        data = form.cleaned_data
        whom = f"user {identifier_visible(obj.user_id)} of tenant {obj.tenant.slug}"
        what = {
            TENANT: f"every person's data in tenant {obj.tenant.slug}",
            PERSON: f"everything of {whom}",
            SESSION: f"session {identifier_visible(data.get('session_id', ''))} of {whom}, with everything in it",
        }[data["covers"]]
        messages.info(request, f"Legal hold {obj.reference} covers {what}.")


class HeldPage(admin.ModelAdmin):
    """A page of a person's or a session's data: it opens with a warning naming each active legal
    hold on what it shows (``holds_of_object`` says which), so staff see it before acting."""

    def holds_of_object(self, obj: Any) -> QuerySet[LegalHold]:
        raise NotImplementedError

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> Any:
        if obj is not None:
            for hold in self.holds_of_object(obj).filter(released_at__isnull=True):
                messages.warning(
                    request,
                    f"Legal hold {hold.reference} covers {hold.covers} here (placed {hold.placed_at:%Y-%m-%d} by "
                    f"{hold.placed_by_name}): nothing it covers can be deleted, by retention, erasure or the API.",
                )
        return super().render_change_form(request, context, add, change, form_url, obj)
