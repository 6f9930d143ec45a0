import json

from django.core.management.base import BaseCommand, CommandError

from ratinggame.inventory import site_inventory


class Command(BaseCommand):
    help = (
        "Print what the site holds, as one JSON object: pairs by pool, ratings (counted, excluded, the sum "
        "of their values), raters, participants, disputes, bonus batches and what they paid, images and "
        "whether each one's file is on disk. Run it before a backup and after a restore: the two must be "
        "equal. Exit status 1 when an image's file is missing."
    )

    def handle(self, *args, **options):
        inventory = site_inventory()
        self.stdout.write(json.dumps(inventory, indent=2, sort_keys=True))
        if inventory["images"]["files_missing"]:
            raise CommandError(f"{inventory['images']['files_missing']} image file(s) missing from MEDIA_ROOT.")
