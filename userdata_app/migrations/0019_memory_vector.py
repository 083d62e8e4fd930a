"""Memory vectors: the embeddings a client's embedder made of an item's fields, kept with the item
for semantic search (``MemoryVector``). Items stored before have none: a search by meaning puts
them after the scored ones until they are written again with an index."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("userdata_app", "0018_memory_source"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryVector",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("path", models.CharField(max_length=512)),
                ("vector", models.BinaryField()),
                (
                    "item",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="vectors",
                        to="userdata_app.memoryitem",
                    ),
                ),
            ],
            options={
                "verbose_name": "memory vector",
                "constraints": [models.UniqueConstraint(fields=("item", "path"), name="memory_vector_unique")],
            },
        ),
    ]
