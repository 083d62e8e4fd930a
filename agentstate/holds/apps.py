from django.apps import AppConfig


class HoldsConfig(AppConfig):
    name = "agentstate.holds"
    label = "holds"
    verbose_name = "Legal holds"

    def ready(self) -> None:
        from agentstate.subject_data import register_not_personal

        register_not_personal(
            "holds.LegalHold",
            "names whose data a legal hold keeps: the record of a legal obligation (GDPR Art. 17(3)(e)), "
            "kept after release; an erasure of the person replaces the user id by its keyed hash",
        )
